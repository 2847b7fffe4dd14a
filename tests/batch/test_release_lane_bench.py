"""bench/release_lane_bench.py summary: finish times and the longest wait for timing with no timing stage
running, from session files whose time stamps are set by hand (a stand-in for a GPU run's)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from beavertui.engine.session.events import (
    Candidate,
    Ran,
    SessionEnd,
    SessionHeader,
    StageResult,
    Timed,
    TimingResult,
    Verdict,
)
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import SessionWriter
from tests.tui.sessions_data import quick_session

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("release_lane_bench", ROOT / "bench" / "release_lane_bench.py")
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _header(task: str, t: float) -> SessionHeader:
    hdr, _events = quick_session(task, "m", "s1", speed=1.0, seed=1)
    return hdr.model_copy(update={"t": t, "protocol": Protocol(budget=1)})


def _timing(wall: float) -> TimingResult:
    return TimingResult(
        method="cupti",
        candidate_ms=1,
        reference_ms=1,
        candidate_cv=0,
        reference_cv=0,
        speedup=1.0,
        wall_s=wall,
    )


def _write(path: Path, header: SessionHeader, events: list[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionWriter(path, header) as w:
        for e in events:
            w.append(e)  # type: ignore[arg-type]


def test_waits_and_finish_times(tmp_path: Path) -> None:
    run = tmp_path / "run"
    ok = StageResult(stage="run", command="r", rc=0)
    v = {"category": "passed", "signature": "", "correct": True}
    # inline: session a's run ends at 10 s, its timing stage runs 40-42 s (waited 30 s, nothing timed then);
    # session b's run ends at 20 s, timed 42-44 s (its wait 20-42 s is covered by a's stage from 40 s)
    _write(run / "a__s0.jsonl", _header("a", 0.0), [
        Candidate(iteration=1, code="x", t=1.0), Ran(iteration=1, result=ok, t=10.0),
        Timed(iteration=1, result=_timing(2.0), t=42.0), Verdict(iteration=1, speedup=1.0, success=True, t=42.0, **v),
        SessionEnd(stop_reason="passed", iterations=1, success=True, t=42.5),
    ])  # fmt: skip
    _write(run / "b__s0.jsonl", _header("b", 5.0), [
        Ran(iteration=1, result=ok, t=20.0),
        Timed(iteration=1, result=_timing(2.0), t=44.0), Verdict(iteration=1, speedup=1.0, success=True, t=44.0, **v),
        SessionEnd(stop_reason="passed", iterations=1, success=True, t=44.5),
    ])  # fmt: skip
    # lane: c's loop ends pending at 12 s, its late timing 13-15 s, its final end at 15 s
    _write(run / "c__s0.jsonl", _header("c", 2.0), [
        Ran(iteration=1, result=ok, t=11.0),
        Verdict(iteration=1, timing_pending=True, reason="timing pending", t=12.0, **v),
        SessionEnd(stop_reason="passed", iterations=1, success=False, timing_pending=1, t=12.0),
        Timed(iteration=1, result=_timing(2.0), t=15.0), Verdict(iteration=1, speedup=1.0, success=True, t=15.0, **v),
        SessionEnd(stop_reason="passed", iterations=1, success=True, t=15.0),
    ])  # fmt: skip
    got = bench.summary(run)
    assert got["sessions"] == 3 and got["final"] == 3 and got["final_within_300s"] == 3
    assert got["final_s"] == [15.0, 42.5, 44.5]
    assert got["loop_end_s"] == {"median": 42.5, "max": 44.5}
    # waits: a 10-40, b 20-42, c 12-13 (c's stage 13-15 and a's 40-42 cover the rest): 10-40 with 13-15 out
    assert got["longest_wait_without_timing_s"] == 25.0 and got["longest_wait_at_s"] == 15.0
    assert got["timing_stages"] == 3 and got["timing_stage_median_s"] == 2.0
    # a simulation's files (bench/batch_bench.py lane): every duration divided by its time scale
    scaled = bench.summary(run, scale=0.5)
    assert scaled["final_s"] == [30.0, 85.0, 89.0] and scaled["loop_end_s"] == {"median": 85.0, "max": 89.0}
    assert scaled["longest_wait_without_timing_s"] == 50.0 and scaled["longest_wait_at_s"] == 30.0
    assert scaled["timing_stage_median_s"] == 4.0 and scaled["final_within_300s"] == 3
