"""What was recorded on an H200 stays consistent with the code that reads it (no GPU needed).

- the demo sessions (sessions/demo) show the behaviours they were written for;
- the corpus validation (docs/data/h200-2026-11-30b/validate.jsonl: every task checked and timed) and the
  baselines stored in the tasks agree, for the harness the corpus has now;
- `beavertui metrics` over a batch run recorded on the H200 (tests/data/h200_batch_run: killed with SIGKILL,
  resumed, then cut by the time limit) equals what the session files say when counted by hand;
- the complete 40-task batch run (tests/data/h200_batch_run_40.tar.gz: SIGKILLed, resumed on a second
  machine, cut, resumed on a third) has every session whole and its metrics agree with the sessions.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.corpus.harness import harness_hash
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Sanitized, SessionEnd, Stalled, Verdict
from beavertui.engine.session.store import read_session

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo"
VALIDATION = ROOT / "docs" / "data" / "h200-2026-11-30b" / "validate.jsonl"
RUN = ROOT / "tests" / "data" / "h200_batch_run"
FULL_RUN = ROOT / "tests" / "data" / "h200_batch_run_40.tar.gz"


def demo(name: str) -> tuple[list[Verdict], SessionEnd, list[object]]:
    header, events, problem = read_session(DEMO / f"{name}.jsonl")
    assert problem is None and header is not None
    assert header.gpu is not None and header.gpu.name == "NVIDIA H200"
    assert header.notes is not None and "written by hand" in header.notes
    end = events[-1]
    assert isinstance(end, SessionEnd)
    return [e for e in events if isinstance(e, Verdict)], end, list(events)


def test_demo_repair_in_three() -> None:
    verdicts, end, _ = demo("repair_in_three")
    assert [v.category for v in verdicts] == ["functional_correctness", "buildability", "passed"]
    assert end.success and end.iterations == 3 and verdicts[-1].speedup is not None
    assert verdicts[-1].speedup >= 0.7


def test_demo_degenerate_repair_collapses_then_recovers() -> None:
    verdicts, end, _ = demo("degenerate_repair")
    naive, fixed = verdicts[1], verdicts[3]
    assert naive.correct and not naive.success and naive.reason == "below gate"
    assert naive.speedup is not None and naive.speedup < 0.2  # the naive kernel: far below the gate
    assert fixed.success and fixed.speedup is not None and fixed.speedup >= 0.7
    assert end.success and end.iterations == 4


@pytest.mark.parametrize(("name", "detector"), [("no_progress", "no_progress"), ("code_cycle", "code_cycle")])
def test_demo_stalls(name: str, detector: str) -> None:
    verdicts, end, events = demo(name)
    assert not end.success and end.stop_reason == detector
    assert [e.detector for e in events if isinstance(e, Stalled)] == [detector]
    assert all(not v.success for v in verdicts)


def test_demo_sanitizer_only_error() -> None:
    verdicts, _end, events = demo("sanitizer_only")
    first = verdicts[0]
    assert first.category == "illegal_memory_access" and first.signature.startswith("memcheck:")
    memcheck = [e for e in events if isinstance(e, Sanitized) and e.iteration == 1 and e.tool == "memcheck"]
    assert memcheck and memcheck[0].records  # the plain run passed; only memcheck saw the reads


def test_validation_and_stored_baselines_agree() -> None:
    rows = [json.loads(line) for line in VALIDATION.read_text().splitlines()]
    assert len({r["task_id"] for r in rows}) == len(rows)
    timed = [r for r in rows if r["reference_ms"] is not None]
    assert all(r["valid"] and r["reference_category"] == "passed" and r["label_agrees"] for r in rows)
    assert all(r["reference_cv"] < 0.03 for r in timed)
    assert len(rows) == len(timed) == 41  # every task checked and timed
    for r in timed:
        stored = ROOT / "corpus" / r["task_id"] / "baselines" / "nvidia_h200_sm_90_cuda_13_0.json"
        baseline = json.loads(stored.read_text())
        assert baseline["median_ms"] == pytest.approx(r["reference_ms"])
        task = load_corpus(ROOT / "corpus").get(r["task_id"])
        assert baseline["harness_hash"] == harness_hash(task)[: len(baseline["harness_hash"])]
    for r in rows:
        if r["label"] == "perf_broken" and r["broken_speedup"] is not None:
            assert r["broken_speedup"] < 0.7


def test_metrics_over_the_h200_batch_run_match_the_sessions(capsys: pytest.CaptureFixture[str]) -> None:
    by_task: dict[str, list[Verdict]] = {}
    ended: set[str] = set()
    for path in sorted(RUN.rglob("*__s*.jsonl")):
        header, events, problem = read_session(path)
        assert problem is None and header is not None
        by_task[header.task.id] = [e for e in events if isinstance(e, Verdict)]
        if events and events[-1].kind == "end":
            ended.add(header.task.id)
    assert len(by_task) == 12 and len(ended) == 3  # the recorded run was cut: 9 sessions never ended
    # scored by default: the finished trajectories only; the cut ones are counted and named, not failed
    assert main(["metrics", str(RUN), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    group = doc["groups"][0]
    assert group["n_tasks"] == len(ended)
    assert group["pass@k"] == pytest.approx(
        sum(any(v.success for v in by_task[t]) for t in ended) / len(ended)
    )
    assert doc["unfinished_sessions"] == 9 and doc["resume"] == [f"beavertui batch --resume {RUN}"]
    # on request, every session as it stands
    assert main(["metrics", str(RUN), "--json", "--include-unfinished"]) == 0
    group = json.loads(capsys.readouterr().out)["groups"][0]
    assert group["n_tasks"] == 12
    assert group["pass@k"] == pytest.approx(sum(any(v.success for v in vs) for vs in by_task.values()) / 12)
    assert group["pass@1"] == pytest.approx(sum(bool(vs) and vs[0].success for vs in by_task.values()) / 12)


def test_the_complete_h200_batch_run_is_whole_and_its_metrics_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tarfile.open(FULL_RUN) as tar:
        tar.extractall(tmp_path, filter="data")
    run = tmp_path / "run"
    by_task: dict[str, list[Verdict]] = {}
    for path in sorted(run.rglob("*__s*.jsonl")):
        header, events, problem = read_session(path)
        assert problem is None and header is not None and header.gpu is not None
        assert header.gpu.name == "NVIDIA H200"
        assert path.read_text().count('"kind":"header"') == 1
        verdicts = [e for e in events if isinstance(e, Verdict)]
        assert [v.iteration for v in verdicts] == [1, 2, 3, 4, 5]  # each attempt once, in order
        assert [e.kind for e in events].count("end") == 1 and isinstance(events[-1], SessionEnd)
        by_task[header.task.id] = verdicts
    assert len(by_task) == 40
    assert main(["metrics", str(run), "--json"]) == 0
    group = json.loads(capsys.readouterr().out)["groups"][0]
    assert group["n_tasks"] == 40
    assert group["pass@k"] == pytest.approx(sum(any(v.success for v in vs) for vs in by_task.values()) / 40)
    assert group["pass@1"] == pytest.approx(sum(vs[0].success for vs in by_task.values()) / 40)
