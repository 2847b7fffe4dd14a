"""The kernelbench half of the scripted:@alternate batch over the CUDABeaver release, as far as it has run on
the H200.

tests/data/release_kb_batch_partial.tar.gz: run ``release-kernelbench`` after its fifth run (2026-12-02;
the session files quote the release's prompts and code, CC BY 4.0, see tests/data/release_real/NOTICE).
62 usable kernelbench instances, K = 2: the broken start at attempt 1, the reference submission (the eager
``Model`` as ``ModelNew``) at attempt 2. 15 sessions have finished and 17 were cut in flight. What the real
sessions must show: the reference submission passes under the reference semantics (the release's static
checker skipped, the release's eval, then the eager model timed against itself in one process), the attempt
that resubmits the broken start is judged by the check made of it, and the metrics score the finished
sessions only, saying how many they left out and how to finish them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import correct_rows, extract_run, metrics_json

from beavertui.engine.session.events import Built, Ran, Sanitized, SessionEnd, Timed, Verdict
from beavertui.engine.session.store import read_session

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "data" / "release_kb_batch_partial.tar.gz"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("release_kb_batch")
    return extract_run(RUN, root)


def _sessions(run: Path) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for path in sorted(run.rglob("*__s*.jsonl")):
        header, events, problem = read_session(path)
        assert header is not None and problem is None and header.gpu is not None
        assert header.gpu.name == "NVIDIA H200" and header.task.family == "kernelbench"
        out[header.task.id] = list(events)
    return out


def _ended(run: Path) -> dict[str, list[object]]:
    return {t: ev for t, ev in _sessions(run).items() if any(isinstance(e, SessionEnd) for e in ev)}


def test_the_run_so_far(run: Path) -> None:
    manifest = json.loads((run / "run.json").read_text())
    assert len(manifest["tasks"]) == 62 and manifest["status"] == "interrupted"
    sessions = _sessions(run)
    assert len(sessions) == 32 and len(_ended(run)) == 15


def test_the_reference_submission_passes_at_attempt_2_under_the_reference_semantics(run: Path) -> None:
    for task, events in _ended(run).items():
        verdicts = [e for e in events if isinstance(e, Verdict)]
        assert [v.iteration for v in verdicts] == [1, 2], task
        first, second = verdicts
        assert not first.correct and second.correct, task
        assert second.speedup is not None and 0.95 < second.speedup < 1.05, (task, second.speedup)
        builds = [e for e in events if isinstance(e, Built) and e.iteration == 2]
        assert builds and all("static checker skipped" in b.result.log for b in builds), task
        runs = [e for e in events if isinstance(e, Ran) and e.iteration == 2]
        assert runs[-1].result.rc == 0 and "correctness=True" in runs[-1].result.log, task
        (timed,) = [e for e in events if isinstance(e, Timed)]
        assert timed.result.method == "torch_events_l2flush_interleaved", task
        assert timed.result.candidate_samples and timed.result.reference_samples


def test_an_attempt_that_resubmits_the_broken_start_is_judged_by_its_check(run: Path) -> None:
    reused = 0
    for task, events in _sessions(run).items():
        stages = [e for e in events if isinstance(e, Built | Ran | Sanitized) and e.iteration == 1]
        marks = {e.result.reused for e in stages}
        if marks in (
            set(),
            {None},
        ):  # cut before its first attempt, or a check kept before checks held events
            continue
        (mark,) = marks  # every stage of the attempt, from the one check
        assert mark is not None and mark.startswith("not run again: the candidate is the broken start"), task
        verdict = next(e for e in events if isinstance(e, Verdict) and e.iteration == 1)
        assert not verdict.correct, task
        reused += 1
    assert reused == 10


def test_the_metrics_score_the_finished_sessions_and_say_what_they_left_out(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, err = metrics_json(run, capsys)
    (group,) = doc["groups"]
    assert doc["unfinished_sessions"] == 17
    assert "17 unfinished session(s) left out of every rate" in err and "--resume" in err
    assert group["n_tasks"] == 15 and group["pass@1"] == 0.0
    assert all(group["p_sweep"][p] == 1.0 for p in ("0.0", "0.1", "0.3", "0.5", "0.7"))


def test_every_correct_attempt_is_in_the_attempts_table_with_its_speedup(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = correct_rows(run, capsys)
    correct = {
        (t, e.iteration) for t, ev in _ended(run).items() for e in ev if isinstance(e, Verdict) and e.correct
    }
    table = {(r["task_id"], r["iteration"]) for r in rows}
    assert len(correct) == 15 and table == correct
    assert all(r["speedup"] is not None for r in rows)
