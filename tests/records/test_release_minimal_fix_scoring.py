"""Release repairs are scored by edit precision and bug recall once a minimal fix of their task is stored.

The run is tests/data/release_batch_final.tar.gz (scripted:@alternate over the 74 usable release instances
outside kernelbench, recorded on the H200; attempt 2 submits the reference). With no store every repair is
unscored. A fix of cuda_59 is searched here (tests/engine/validation/test_minimal_fix_store.py's oracle, built
by the test: the reference's predicate in, the broken one out) and stored in this machine's store; then
``beavertui metrics`` scores that task's repair against it, by the same edits.py every bundled task uses,
and still counts the 73 others unscored. The package's own fixes (verified on an H100) are left out of
those tests and score the run in the last one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.engine.analysis.edits import edit_score
from beavertui.engine.corpus import fixes
from beavertui.engine.corpus.minimal_search import Budget
from beavertui.engine.session.events import Candidate, Verdict
from beavertui.engine.session.store import read_session
from beavertui.engine.validation import minimal_fixes as mf
from tests.conftest import extract_run, metrics_json
from tests.engine.validation.test_minimal_fix_store import H200, TASK, oracle, task

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "release_batch_final.tar.gz"


@pytest.fixture()
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The run, with an empty store on this machine and the package's fixes left out (see the last test)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(fixes, "KNOWN_FIXES", tmp_path / "no-package-fixes")
    fixes.clear_caches()
    yield extract_run(RUN, tmp_path / "run")
    fixes.clear_caches()


def test_a_stored_fix_scores_the_release_repair_of_its_task(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, _ = metrics_json(run, capsys)
    (group,) = doc["groups"]
    assert group["analysed_repairs"] == group["unscored_repairs"] == 74
    assert group["edit_precision"] is None and group["bug_recall"] is None

    t = task()
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    out = mf.search(t, oracle([]), "judge", store, Budget(), H200)  # type: ignore[arg-type]
    assert out.verified and out.fix is not None

    (path,) = run.rglob(f"{TASK}__s0.jsonl")
    header, events, _ = read_session(path)
    assert header is not None and header.task.broken_start == t.broken_start()  # type: ignore[attr-defined]
    # recorded on the H200 over the release, which ships no minimal fix: only the store knows it (the release
    # may lie at the recorded path on this machine, as the GPU scripts unpack it there)
    assert not (Path(header.task.corpus) / TASK / fixes.PATCH).exists()
    (verdict,) = [e for e in events if isinstance(e, Verdict) and e.correct]
    (repair,) = [e.code for e in events if isinstance(e, Candidate) and e.iteration == verdict.iteration]
    expected = edit_score(header.task.broken_start, repair, out.fix)
    assert expected.recall == 1.0 and expected.precision is not None and 0 < expected.precision < 1

    doc, _ = metrics_json(run, capsys)
    (group,) = doc["groups"]
    assert group["analysed_repairs"] == 74 and group["unscored_repairs"] == 73
    assert group["edit_precision"] == pytest.approx(expected.precision)
    assert group["bug_recall"] == pytest.approx(1.0)


def test_the_judge_oracle_over_the_recorded_h200_outcomes_of_the_run(run: Path) -> None:
    """The judge oracle (JudgeOracle over a toolchain: attempt, verdict at the gate) replaying what the H200
    recorded for cuda_59: its broken start failed, its reference passed at about 1.0x; every other subset of
    the reference's changes was never run, so the recorded toolchain fails it as unrecorded. The search
    therefore ends with the whole reference, which is no minimal fix, and says so."""
    from beavertui.engine.toolchain.recorded import RecordedToolchain

    (path,) = run.rglob(f"{TASK}__s0.jsonl")
    tool = RecordedToolchain.load(path, unknown="fail")
    t = task()
    judge = mf.JudgeOracle(t, tool, 0.7)  # type: ignore[arg-type]
    screen = mf.JudgeOracle(t, tool, 0.7, timed=False)  # type: ignore[arg-type]
    assert not screen(t.broken_start()).passed  # type: ignore[attr-defined]
    reference = judge(t.reference())  # type: ignore[attr-defined]
    assert reference.passed and reference.correct and reference.speedup is not None
    assert 0.95 < reference.speedup < 1.05 and reference.category == "passed"
    store = mf.Store(fixes.store_roots()[0], H200, 0.7)
    out = mf.search(t, judge, "judge", store, Budget(), H200, screen=screen)  # type: ignore[arg-type]
    assert out.status == "whole" and not out.verified and out.speedup == reference.speedup
    assert "the only repair found is the whole reference" in out.why
    assert fixes.target_for("/x", TASK, t.broken_start()).source is None  # type: ignore[attr-defined]
    answers = store.folder / "answers" / "correct" / f"{TASK}.jsonl"
    kept = [json.loads(line) for line in answers.read_text().splitlines()]
    assert kept[0]["category"] == "functional_correctness" and kept[1]["passed"]  # as the H200 recorded
    # the recorded toolchain knows a candidate by its code less comments and blank lines: the reference
    # without some of its comment lines is the recorded reference; anything else was never run
    for k in kept[2:]:
        assert k["passed"] == (k["speedup"] == reference.speedup) != (k["reason"] == "unrecorded candidate")


def test_the_package_s_fixes_score_the_release_repairs_of_their_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixes the package ships (engine/corpus/known/fixes: verified by the judge on an H100, each
    1-minimal over hunks or lines) apply to the recorded sessions' own broken starts and score their
    repairs; every other repair stays unscored."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    fixes.clear_caches()
    run = extract_run(RUN, tmp_path / "run")
    shipped: dict[str, str] = {}
    for folder in sorted(fixes.KNOWN_FIXES.iterdir()):
        record = json.loads((folder / fixes.RECORD).read_text())
        for tid, entry in record["tasks"].items():
            assert entry["verified"] and entry["oracle"] == "judge" and entry["gpu"] == folder.name
            assert entry["correct"] and entry["speedup"] >= record["gate"]
            shipped.setdefault(tid, folder.name)
    precision, recall = [], []
    for tid in shipped:
        (path,) = run.rglob(f"{tid}__s0.jsonl")
        header, events, _ = read_session(path)
        assert header is not None
        target = fixes.target_for(header.task.corpus, tid, header.task.broken_start)
        assert target.source is not None, target.reason
        verdict = next(e for e in events if isinstance(e, Verdict) and e.correct)
        # an attempt resumed after a cut has its candidate written again, the same code
        (repair,) = {e.code for e in events if isinstance(e, Candidate) and e.iteration == verdict.iteration}
        score = edit_score(header.task.broken_start, repair, target.source)
        assert score.precision is not None and score.recall is not None
        precision.append(score.precision)
        recall.append(score.recall)
    doc, _ = metrics_json(run, capsys)
    (group,) = doc["groups"]
    assert shipped and group["analysed_repairs"] == 74
    assert group["unscored_repairs"] == 74 - len(shipped)
    assert group["edit_precision"] == pytest.approx(sum(precision) / len(precision))
    assert group["bug_recall"] == pytest.approx(sum(recall) / len(recall))
    # the figures docs/analysis.md quotes: 51 scored, 23 unscored, edit precision 85.9%, bug recall 98.0%
    assert (len(shipped), group["unscored_repairs"]) == (51, 23)
    assert (round(100 * group["edit_precision"], 1), round(100 * group["bug_recall"], 1)) == (85.9, 98.0)
    # and where the targets come from: the GPU that verified them, and which store, in the analysis table's
    # note and on the analysis pane (the run was recorded on the H200, the fixes verified on an H100)
    analysis = next(t for t in doc["tables"] if t["name"] == "analysis")
    slug = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"
    assert f"The minimal fixes scored against: verified on {slug} (the package's store)." in analysis["note"]
    from beavertui.engine.analysis.report import analyse, attempt_lines
    from beavertui.engine.session.state import fold

    (path,) = run.rglob(f"{next(iter(shipped))}__s0.jsonl")
    header, events, _ = read_session(path)
    assert header is not None
    state = fold(header, events)
    first = next(a for a in state.attempts if a.verdict is not None and a.verdict.correct)
    lines = attempt_lines(analyse(header.task, first))
    assert lines[0].endswith(f"; minimal fix verified on {slug} (the package's store)"), lines[0]
