"""`beavertui metrics` on a real batch run: edit precision, bug recall and both degeneration rates.

The run is made by the CLI (`beavertui batch`) with the package's scripted demo model and the recorded
vec_scale outcomes, so every number below comes from the same sessions a GPU run would write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.analysis.degeneration import compare
from beavertui.engine.analysis.edits import edit_score
from beavertui.engine.corpus import patch
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import read_session
from tests.batch.test_batch import batch, sessions


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sessions")
    assert batch(root, "--run-id", "demo", "--samples", "2") == 0
    return root / "demo"


def first_success(path: Path) -> tuple[str, str, str | None, str, int]:
    header, events, _ = read_session(path)
    assert header is not None
    state = fold(header, events)
    first = next(a for a in state.attempts if a.verdict and a.verdict.correct)
    assert first.candidate is not None and first.candidate.code is not None
    return (
        header.task.broken_start,
        first.candidate.code,
        header.task.reference,
        header.model.name,
        first.iteration,
    )


def test_metrics_json_has_the_analysis_next_to_pass_at_k(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["metrics", str(run_dir), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    # Expected values recomputed from the sessions' own first correct candidates.
    firsts = [first_success(p) for p in sessions(run_dir)]
    assert len(firsts) == 2
    # Scored against the task's verified minimal fix (here the reference's own edit).
    fix = (REPO / "tests/data/recorded/vec_scale/minimal_fix.patch").read_text()
    scores = [edit_score(b, c, patch.apply(b, fix)) for b, c, _r, _m, _i in firsts]
    assert group["edit_precision"] == pytest.approx(sum(s.precision or 0 for s in scores) / 2)
    assert group["bug_recall"] == pytest.approx(sum(s.recall or 0 for s in scores) / 2)
    later = [f for f in firsts if f[4] >= 2]
    assert later, "the demo script repairs at iteration 2"
    code_deg = [compare(c, b, r).degenerate for b, c, r, _m, _i in later]
    assert group["code_degenerate_rate"] == pytest.approx(sum(code_deg) / len(later))
    assert group["analysed_repairs"] == 2 and group["unscored_repairs"] == 0
    # the paper's gate after the run: the demo's first correct repair (iteration 2) is 0.02x, so it counts
    # at p = 0 only, and it is a degenerate repair by both rules
    assert group["pass@k"] == 0.0 and group["p_sweep"]["0.0"] == 1.0
    assert group["degenerate_rate"] == 1.0 and group["degenerate_rate_raw"] == 1.0
    for key in ("edit_precision", "bug_recall", "code_degenerate_rate"):
        assert 0.0 <= group[key] <= 1.0


def test_metrics_table_shows_the_analysis_columns(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["metrics", str(run_dir), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    title = "### Edit precision, bug recall and degeneration per model and protocol (next to pass@k)"
    assert title in out
    table = out[out.index(title) :].splitlines()
    assert table[2] == (
        "| model | protocol | pass@k | repairs | edit precision | bug recall | degenerate (speedup) "
        "| degenerate (code) |"
    )
    row = table[4].split(" | ")
    assert row[3] == "2" and all("[" in cell for cell in row[4:])  # every rate with its interval
    assert "95% bootstrap interval over tasks" in out


def test_metrics_of_an_attempts_table_says_the_analysis_needs_the_run(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "attempts.jsonl"
    assert main(["export", str(run_dir), "-o", str(table)]) == 0
    capsys.readouterr()
    assert main(["metrics", str(table), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["edit_precision"] is None and group["analysed_repairs"] is None
    assert main(["metrics", str(table)]) == 0
    assert "give the run directory" in capsys.readouterr().err


DEMO_RUN = Path("tests/data/analysis/demo_run")
REPO = Path(__file__).resolve().parents[2]


def test_bundled_demo_run_works_with_the_documented_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/analysis.md's commands, verbatim but for --out, from the repository root."""
    monkeypatch.chdir(REPO)
    assert len(sessions(DEMO_RUN)) == 2
    rc = main(
        [
            "attribute",
            "--run",
            str(DEMO_RUN),
            "--components",
            "compiler,runtime,timing",
            "--samples",
            "2",
            "--model",
            "scripted:vec_scale_demo.toml",
            "--recorded",
            "tests/data/recorded/vec_scale.recordings.jsonl",
            "--out",
            str(tmp_path / "attribution"),
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "4 frozen step(s), 64 branches (0 without a verdict, left out)" in out
    for measure in ("compiled", "correct", "passed"):
        assert (
            f"outcome: {measure}  (values in outcome share, 0..1; 95% percentile bootstrap intervals, "
            f"1000 resamples, seed 0; 64 branches" in out
        )
    rows = [
        line.split()
        for line in out.splitlines()
        if line.strip().startswith(("compiler ", "runtime ", "timing "))
    ]
    assert len(rows) == 9 and all(
        len(r) == 7 and r[2].startswith("[") for r in rows
    )  # value [low, high] twice
    assert (tmp_path / "attribution" / "attribution-run-demo_run.json").is_file()
    assert main(["metrics", str(DEMO_RUN), "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["analysed_repairs"] == 2 and group["edit_precision"] is not None


def test_self_sourced_tasks_lose_one_iteration_in_the_analysis_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With budget 2, the demo's first success comes at iteration 2; a self-sourced task counts only 1."""
    protocol = tmp_path / "k2.toml"
    protocol.write_text('name = "k2"\n[protocol]\nbudget = 2\ngate = 0.0\n')
    assert batch(tmp_path, "--run-id", "k2", "--protocol", str(protocol)) == 0
    side = tmp_path / "sources.json"
    side.write_text(json.dumps({"vec_scale": "scripted:vec_scale_demo.toml"}))
    capsys.readouterr()
    assert main(["metrics", str(tmp_path / "k2"), "--json"]) == 0
    (plain,) = json.loads(capsys.readouterr().out)["groups"]
    assert plain["pass@k"] == 1.0 and plain["analysed_repairs"] == 1 and plain["edit_precision"] is not None
    assert main(["metrics", str(tmp_path / "k2"), "--json", "--source-models", str(side)]) == 0
    (own,) = json.loads(capsys.readouterr().out)["groups"]
    assert own["pass@k"] == 0.0 and own["analysed_repairs"] == 0
    assert (own["edit_precision"], own["bug_recall"], own["code_degenerate_rate"]) == (None, None, None)
