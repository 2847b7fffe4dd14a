"""A scripted:@alternate batch over the CUDABeaver release, recorded on the H200 (tests/data/release_batch.tar.gz).

Every usable nvcc-family instance with a reference submission (78 of them; kernelbench was not yet validated
and cutlass and cudabench have no reference a model could submit), K = 2: the broken start at attempt 1,
the reference at attempt 2. Three runs on three machines (each resumed the one before), each cut by its time
budget: 52 sessions finished and 25 cut in flight. Four ThunderKittens tasks were validated only after the
run began: their reference fails as released (a header the release does not ship), so they were withdrawn
from the run (run.json ``withdrawn_tasks``, written by the function a resume runs, against the H200's stored
verdicts); three of them had finished sessions. This checks what a researcher reads from it: unfinished
sessions and withdrawn tasks are out of every rate and said, every correct attempt is in the attempts table
with its speedup, pass@k at p = 0 is 100% of the finished usable tasks, and the reference timed against itself
is never called a degeneration.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.events import SessionEnd, Verdict
from beavertui.engine.session.store import read_session
from tests.conftest import extract_run

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "release_batch.tar.gz"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_run(RUN, tmp_path_factory.mktemp("release_batch"))


def _sessions(run: Path) -> dict[str, tuple[bool, list[Verdict]]]:
    out: dict[str, tuple[bool, list[Verdict]]] = {}
    for path in sorted(run.rglob("*__s*.jsonl")):
        header, events, _problem = read_session(path)
        assert header is not None and header.gpu is not None and header.gpu.name == "NVIDIA H200"
        assert header.task.layout == "release"
        out[header.task.id] = (
            any(isinstance(e, SessionEnd) for e in events),
            [e for e in events if isinstance(e, Verdict)],
        )
    return out


def test_the_recorded_release_batch_is_what_the_run_says(run: Path) -> None:
    sessions = _sessions(run)
    manifest = json.loads((run / "run.json").read_text())
    withdrawn = manifest["withdrawn_tasks"]
    assert len(manifest["tasks"]) == 74 and len(sessions) == 77 and len(manifest["resumed"]) == 2
    assert len(withdrawn) == 4 and not set(withdrawn) & set(manifest["tasks"])
    assert all("memory.cuh: No such file" in why for why in withdrawn.values())
    finished = {t: vs for t, (done, vs) in sessions.items() if done}
    assert len(finished) == 52
    for t in withdrawn.keys() & finished.keys():  # the reference submission fails as the validation found
        assert [v.category for v in finished.pop(t)] == ["environment_dependency"] * 2
    assert len(finished) == 49
    for vs in finished.values():  # broken start, then the reference, which passes and is timed
        assert [v.iteration for v in vs] == [1, 2] and not vs[0].correct and vs[1].correct
        assert vs[1].speedup is not None and 0.98 < vs[1].speedup < 1.02


def test_metrics_score_every_finished_session_and_leave_the_cut_ones_out(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = _sessions(run)
    withdrawn = json.loads((run / "run.json").read_text())["withdrawn_tasks"]
    finished = [t for t, (done, _) in sessions.items() if done and t not in withdrawn]
    assert main(["metrics", str(run), "--json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    group = doc["groups"][0]
    assert group["n_tasks"] == len(finished) == 49
    assert group["p_sweep"]["0.0"] == 1.0 and group["pass@k"] == 1.0 and group["pass@1"] == 0.0
    # the reference against itself: over a third measure under 1.0 (the paper's raw rule), none beyond noise
    assert group["degenerate_rate_raw"] == pytest.approx(18 / 49) and group["degenerate_rate"] == 0.0
    assert "25 unfinished session(s) left out of every rate" in out.err
    assert f"batch --resume {run}" in out.err
    # the withdrawn tasks' sessions are in no rate, and the output says so
    assert doc["withdrawn_sessions"] == 3 and set(doc["withdrawn_tasks"]) <= set(withdrawn)
    assert "3 session(s) of 3 task(s) withdrawn from their run left out of every rate" in " ".join(
        out.err.split()
    )
    # with --include-unfinished the cut sessions count as they stand (those cut before their first verdict
    # have nothing to score)
    assert main(["metrics", str(run), "--json", "--include-unfinished"]) == 0
    wide = json.loads(capsys.readouterr().out)["groups"][0]
    scored = [vs for t, (_, vs) in sessions.items() if vs and t not in withdrawn]
    assert wide["n_tasks"] == len(scored) > 49
    assert wide["pass@k"] == pytest.approx(sum(any(v.correct for v in vs) for vs in scored) / len(scored))


def test_every_correct_attempt_is_in_the_attempts_table(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = _sessions(run)
    assert main(["export", str(run)]) == 0
    out = capsys.readouterr()
    rows = [json.loads(line) for line in out.out.splitlines() if line.strip()]
    assert "3 sessions of tasks withdrawn from their run left out" in out.err
    correct = {(t, v.iteration) for t, (_, vs) in sessions.items() for v in vs if v.correct}
    table = {(r["task_id"], r["iteration"]) for r in rows if r["correct"]}
    assert correct and table == correct
    assert all(r["speedup"] is not None for r in rows if r["correct"])


def test_metrics_group_by_the_label_or_the_corrected_one(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cuda_107 is labelled compile_error and its validation on the H200 saw functional_correctness
    (usable with a corrected label). A session header that carries the corrected label is grouped by it with
    --by observed, and by its release label with --by category."""
    import shutil

    finished = [p for p in sorted(run.rglob("*__s0.jsonl")) if '"kind":"end"' in p.read_text()]
    relabelled = next(p for p in finished if "cuda_107__compile_error" in p.name)
    other = next(p for p in finished if "cuda_110__logic_error" in p.name)
    mini = tmp_path / "mini"
    for p in (relabelled, other):
        dest = mini / p.relative_to(run)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dest)
    dest = mini / relabelled.relative_to(run)
    lines = dest.read_text().splitlines()
    header = json.loads(lines[0])
    header["task"]["observed_label"] = "functional_correctness"
    dest.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")

    def column(by: str, table: str) -> list[str]:
        """The third column (the group) of one breakdown, read as its own CSV table."""
        assert main(["metrics", str(mini), "--by", by, "--table", table, "--format", "csv"]) == 0
        rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
        return [row[2] for row in rows[1:]]

    # cuda_110 (logic_error) was seen as functional_correctness too: both in one bucket; by the release's
    # labels they are two
    assert column("observed", "by_observed_category") == ["functional_correctness"]
    assert column("category", "by_category") == ["buildability", "functional_correctness"]
    assert main(["export", str(mini)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    seen = {(r["task_id"][:8], r["observed_label"]) for r in rows}
    assert seen == {("cuda_107", "functional_correctness"), ("cuda_110", None)}
    # cuda_110's header was written before headers recorded the observed category: said, not guessed
    assert main(["metrics", str(mini), "--by", "observed"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "1 task(s) grouped by their label: their session headers were written before" in text


def test_sessions_written_before_headers_recorded_the_observed_category_are_counted(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first of the two runs wrote headers without the field; the second writes it (null where the
    validation agreed with the label). Of the 49 scored tasks, those whose session began in the first run
    are grouped by their label, and the table says how many."""
    from beavertui.engine.session.store import SessionReader

    old = set()
    for path in run.rglob("*__s0.jsonl"):
        header = SessionReader(path).header
        assert header is not None
        if "observed_label" not in header.task.model_fields_set and '"kind":"end"' in path.read_text():
            old.add(header.task.id)
    assert 0 < len(old) < 49
    assert main(["metrics", str(run), "--by", "observed"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"{len(old)} task(s) grouped by their label" in text


def test_the_real_outputs_classify_as_they_did_on_the_h200(run: Path) -> None:
    """Every recorded attempt's real stage outputs (release build logs, assertion failures, memcheck
    reports, a timed-out run) classified again here give the category the H200 gave; and each broken start
    failed in the batch as its validation, a separate run, saw it (docs/data/h200-2026-12-01)."""
    from beavertui.engine.judge.classify import classify
    from beavertui.engine.session.state import fold

    validated = {}
    for line in (
        (ROOT / "docs" / "data" / "h200-2026-12-01" / "release-validate.jsonl").read_text().splitlines()
    ):
        doc = json.loads(line)
        validated[doc["task_id"]] = doc["broken_category"]
    attempts = starts = 0
    for path in sorted(run.rglob("*__s0.jsonl")):
        header, events, _ = read_session(path)
        assert header is not None
        state = fold(header, events)
        for a in state.attempts:
            if a.verdict is None or a.build is None:
                continue
            b, r = a.build.result, a.run.result if a.run is not None else None
            memcheck = next(
                (s.result.log for s in a.sanitize if s.tool == "memcheck" and not s.result.timed_out), None
            )
            timed_out = b.timed_out or (r is not None and r.timed_out)
            got = classify(b.rc, b.log, r.rc if r else None, r.log if r else "", timed_out, memcheck,
                           r.signal if r else None)  # fmt: skip
            assert got.category == a.verdict.category, (header.task.id, a.iteration)
            attempts += 1
            if a.iteration == 1:
                assert validated[header.task.id] == a.verdict.category, header.task.id
                starts += 1
    assert (attempts, starts) == (117, 65)
