"""`beavertui metrics --gate P`, `--paper` and the paper_tables key of `--json`, on recorded runs."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.metrics import table_io
from tests.engine.metrics.test_paper_definitions import gpt54_rows

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def final_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("release_batch_final")
    with tarfile.open(DATA / "release_batch_final.tar.gz") as tar:
        tar.extractall(root, filter="data")
    return root / "run"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["metrics", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_gate_rescores_a_run_at_another_p(final_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The release batch ran the paper's gate (0.7, after the run): at --gate 1.0 its pass@k is its own p
    sweep's value at 1.0 (47/74 = 0.63514), and the protocol says p = 1.0."""
    (own,) = _json(capsys, str(final_run))["groups"]  # type: ignore[misc]
    (at1,) = _json(capsys, str(final_run), "--gate", "1.0")["groups"]  # type: ignore[misc]
    assert own["protocol"]["gate"] == 0.7 and at1["protocol"]["gate"] == 1.0
    assert at1["pass@k"] == pytest.approx(own["p_sweep"]["1.0"]) == pytest.approx(0.63514, abs=1e-5)
    assert at1["p_sweep"] == own["p_sweep"]
    assert main(["metrics", str(final_run), "--gate", "-1"]) == 2
    assert "--gate must be 0 to 3, not -1" in capsys.readouterr().err


def test_paper_tables_key_of_the_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gpt54.jsonl"
    with path.open("w") as f:
        table_io.write_jsonl(gpt54_rows(), f)
    doc = _json(capsys, str(path))
    pt = doc["paper_tables"]
    (row,) = pt["table1"]  # type: ignore[index]
    assert set(row) >= {"model", "pass@1", "debug_rate@k", "pass@k", "stagnation_rate", "dominant_stagnation"}
    assert set(row) >= {"compile@1", "avg_iterations", "n_tasks"}
    assert (
        row["n_tasks"] == 213
        and round(row["pass@k"], 3) == 0.291
        and round(row["stagnation_rate"], 3) == 0.853
    )
    assert row["dominant_stagnation"] == "no_progress"
    (t2,) = pt["table2"]  # type: ignore[index]
    assert t2["iter"] == row["pass@k"] and t2["rep"] is None and t2["delta_iter_rep"] is None
    assert pt["kendall_tau_iter_rep"]["left_out"] == ["GPT-5.4"]  # type: ignore[index]
    # the human layouts: Table 1 and Table 2 with the denominators and the departures under them
    for fmt in ("md", "latex", "table"):
        out_file = tmp_path / f"paper.{fmt}"
        assert main(["metrics", str(path), "--paper", "--format", fmt, "-o", str(out_file)]) == 0
        text = out_file.read_text()
        assert (
            "Table 1" in text
            and "Table 2" in text
            and "81/95" in text
            and "Departures from the paper" in text
        )
        assert "85.3" in text and "29.1" in text
        # every number says its unit and what it counts
        assert text.count("Percent of the row's tasks") == 2
        assert "avg iterations: the mean iteration (1 to K) of the first correct attempt" in " ".join(
            text.split()
        )
        assert "Iter: the main run's pass@5 at its gate" in " ".join(text.split())
        # one model has no Rep: tau is n/a, and the line says why
        assert "n/a over 0 model(s): it needs two models or more with both Iter and Rep" in " ".join(
            text.split()
        )


def test_the_paper_tables_say_what_a_dash_means_and_what_infrastructure_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Table 1 printed '-' for debug_rate@5 at pass@1 = 100 and said nothing of the attempts an endpoint failure
    hit (the rows' denominators silently shrank); both are said under the table now."""
    proto = {"method": "iterative", "feedback": "L3", "history": 4, "temperature": 0.7, "gate": 0.7, "budget": 5,
             "gate_mode": "after_run"}  # fmt: skip
    rows = [
        {"run_id": "r", "model": "m", "task_id": "t0", "protocol": proto, "sample": 0, "iteration": 1,
         "category": "passed", "correct": True, "speedup": 1.2, "stop_reason": "passed", "self_source": False},
        {"run_id": "r", "model": "m", "task_id": "t1", "protocol": proto, "sample": 0, "iteration": 1,
         "category": None, "correct": None, "speedup": None, "stop_reason": "error", "self_source": False,
         "infra_error": True},
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    with path.open("w") as f:
        table_io.write_jsonl(rows, f)
    assert main(["metrics", str(path), "--paper", "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "| m | 1 | 100.0 | - | 100.0 | - | 0/0 | - | 100.0 | 1.00 |" in out
    assert (
        "-: not defined (debug_rate@5 when pass@1 is 100; stagnation when no trajectory failed; dominant "
        "stagnation when none stagnated; avg iterations when none was correct)."
    ) in out
    assert (
        "Left out of every rate: the attempts an infrastructure failure (endpoint, GPU, toolchain) hit (m: 1), "
        "and with them a task that has no other attempt; a batch's --resume RUN_DIR --retry-infra runs their "
        "sessions again."
    ) in out
    assert (
        "-: no repeated arm for the model (Rep, Delta, tasks (Rep); an under-sampled one: Rep and Delta, named "
        "under the departures), or no value at some p (swing)."
    ) in out
    doc = _json(capsys, str(path))
    (row,) = doc["paper_tables"]["table1"]  # type: ignore[index]
    assert row["infra_excluded"] == 1 and row["n_tasks"] == 1


def test_attempts_a_replay_could_not_judge_are_said_under_the_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On --toolchain demo a candidate the H200 never ran is a failed build by rule ('unrecorded candidate'):
    the tables counted it as the model's failure without a word. Now every table says how many there were."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "script.toml"
    script.write_text("[[reply]]\ncontent = '''\n```cuda\n// not a transpose\n```\n'''\n" * 5)
    argv = ["--toolchain", "demo", "--tasks", "transpose_00", "--quiet", "--no-reply-cache"]
    assert (
        main(["batch", "--models", f"scripted:{script}", "--run-id", "u", "--protocol", "legacy", *argv]) == 0
    )
    capsys.readouterr()
    assert main(["metrics", "sessions/u", "--paper", "--format", "md"]) == 0
    out, err = capsys.readouterr()
    note = (
        "2 attempt(s) of 1 task(s) were candidates the recorded toolchain had no outcome for (unrecorded "
        "candidate): counted as failed builds by rule, nothing was built, so those rates say nothing about the "
        "model (a GPU run judges them)"
    )
    assert note in out and note in err
    assert _json(capsys, "sessions/u")["unrecorded_attempts"] == 2
    # the demos' own replies are all recorded: nothing to say
    assert main(["batch", "--demo", "--run-id", "d", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["metrics", "sessions/d", "--paper", "--format", "md"]) == 0
    assert "unrecorded" not in capsys.readouterr().out


def test_tasks_the_run_left_out_before_it_began_are_said_under_the_tables(
    final_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The release batch left 67 instances out before it began (unusable on the H200, or no reference a
    model could submit): Table 1's 'tasks' said 74 and nothing said which were missing or why."""
    excluded = json.loads((final_run / "run.json").read_text())["excluded_tasks"]
    assert len(excluded) == 67
    assert main(["metrics", str(final_run), "--paper", "--format", "md"]) == 0
    out = capsys.readouterr().out
    first = sorted(excluded.items())[0]
    assert (
        f"67 task(s) left out of the run before it began (run.json excluded_tasks), in no row: {first[0]}: "
        f"{first[1]}; "
    ) in out
    assert _json(capsys, str(final_run))["excluded_tasks"] == dict(sorted(excluded.items()))
