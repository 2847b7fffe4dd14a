"""The timing lane (batch/timing_lane.py, engine/session/late.py): under a gate applied after the run a
session ends when its loop ends, and its correct attempt is timed beside the sessions and appended to its
file, once, resume-safe.

Replayed on the recorded H200 outcomes of tests/data/release_fresh (ten usable nvcc-family instances,
scripted:@alternate, K = 2, p = 0.7 after the run): both designs must give the same speedups and scores.
"""

from __future__ import annotations

import json
import tarfile
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from beavertui.cli import main
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.errors import ToolchainError
from beavertui.engine.session.events import SessionEnd, Timed, Verdict
from beavertui.engine.session.late import append_timing, pending
from beavertui.engine.session.store import read_session
from beavertui.engine.toolchain.recorded import RecordedToolchain
from tests.conftest import metrics_json

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "tests" / "data" / "release_fresh" / "release_fresh.tar.gz"
PROTOCOL = ROOT / "scripts" / "release-alternate.toml"


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(tmp_path / "release", filter="data")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def _argv(root: Path, run_id: str, *extra: str) -> list[str]:
    return [
        "batch", "--protocol", str(PROTOCOL), "--corpus", str(root / "release"),
        "--toolchain", f"recorded:{root / 'release' / 'sessions'}", "--sessions-dir", str(root / "runs"),
        "--run-id", run_id, "--quiet", "--no-cache", *extra,
    ]  # fmt: skip


def _sessions(run: Path) -> dict[str, tuple[list[Any], SessionEnd]]:
    out = {}
    for path in run.rglob("*__s*.jsonl"):
        header, events, _ = read_session(path)
        assert header is not None and isinstance(events[-1], SessionEnd)
        out[header.task.id] = (events, events[-1])
    return out


def _speedups(run: Path) -> dict[str, float | None]:
    out = {}
    for task, (events, _end) in _sessions(run).items():
        final = [e for e in events if isinstance(e, Verdict)]
        out[task] = final[-1].speedup
    return out


def test_the_lane_gives_what_inline_timing_gives(fresh: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_argv(fresh, "inline", "--inline-timing")) == 0
    assert main(_argv(fresh, "lane")) == 0
    said = capsys.readouterr().err.splitlines()
    # the batch's own summary counts the sessions the lane's timings made pass (10 of 10, both designs)
    assert sum("10/10 sessions (0 already done), 10 passed" in line for line in said) == 2, said
    inline, lane = fresh / "runs" / "inline", fresh / "runs" / "lane"
    assert _speedups(lane) == _speedups(inline) and len(_speedups(lane)) == 10
    assert all(s is not None and 0.9 < s < 1.1 for s in _speedups(lane).values())  # the reference vs itself
    for task, (events, end) in _sessions(lane).items():
        kinds = [e.kind for e in events]
        # the loop's end (its correct attempt pending), then the lane's timing, verdict and end
        assert kinds[-4:] == ["end", "timing", "verdict", "end"], (task, kinds)
        first_end = next(e for e in events if isinstance(e, SessionEnd))
        assert first_end.timing_pending == 1 and not first_end.success
        pending_verdict = [e for e in events if isinstance(e, Verdict)][-2]
        assert pending_verdict.timing_pending and pending_verdict.speedup is None
        assert end.timing_pending == 0 and end.success and end.stop_reason == "passed"
        assert Counter(e.iteration for e in events if isinstance(e, Timed)) == {2: 1}
    doc_lane, said = metrics_json(lane, capsys)
    doc_inline, _ = metrics_json(inline, capsys)
    assert (
        doc_lane["groups"] == doc_inline["groups"] and doc_lane["final"] and doc_lane["timings_pending"] == 0
    )
    assert "pending" not in said


class _Failing(RecordedToolchain):
    """The recorded outcomes, but every late timing fails on the machine's side (a GPU taken away)."""

    def time_later(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        raise ToolchainError("GPU 0 failed: the probe kernel did not finish", source="gpu")


def test_a_pending_timing_is_never_lost_never_twice_and_scores_nothing_as_final(
    fresh: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lane's machine fails: every session ends with its timing pending, metrics scores nothing as
    final and says how many wait. A resume times them; one append is then cut by a kill halfway through its
    write and is made whole by the next; a timing already appended is never appended again."""
    import beavertui.engine.toolchain.recorded as recorded

    monkeypatch.setattr(recorded, "RecordedToolchain", _Failing)
    assert main(_argv(fresh, "cut")) == 0
    err = capsys.readouterr().err
    assert "timing lane: 10 timing(s) failed on the machine's side and stay pending" in err
    run = fresh / "runs" / "cut"
    assert all(end.timing_pending == 1 for _events, end in _sessions(run).values())
    assert main(["metrics", str(run), "--json"]) == 2
    assert "nothing final to score yet: 10 timing(s) pending in 10 session(s)" in capsys.readouterr().err
    assert main(["metrics", str(run), "--json", "--include-unfinished"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["timings_pending"] == 10 and not json.loads(out.out)["final"]
    assert "10 timing(s) pending in 10 session(s), included as they stand, NOT FINAL" in out.err

    # a kill in the middle of an append: half of its lines on disk
    path = sorted(run.rglob("cuda_59*__s0.jsonl"))[0]
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(fresh / "cache"))
    tool = RecordedToolchain.load(fresh / "release" / "sessions")
    found = pending(path)
    assert found is not None and found[2] == [2]
    task = load_corpus(fresh / "release").get(found[0].task.id)
    attempt = found[1].attempt(2)
    assert attempt is not None and attempt.candidate is not None and attempt.verdict is not None
    late = list(tool.time_later(task, attempt.candidate.code or "", attempt.verdict, 0.7))
    whole = path.read_bytes()
    line = late[0].model_dump_json().encode()
    path.write_bytes(whole + line[: len(line) // 2])  # cut mid-line, no end written
    # another cut after the timing's whole line, in the middle of the verdict's
    other = sorted(run.rglob("cuda_110*__s0.jsonl"))[0]
    found = pending(other)
    assert found is not None and found[2] == [2]
    attempt = found[1].attempt(2)
    assert attempt is not None and attempt.candidate is not None and attempt.verdict is not None
    task = load_corpus(fresh / "release").get(found[0].task.id)
    timed, verdict = list(tool.time_later(task, attempt.candidate.code or "", attempt.verdict, 0.7))
    half = verdict.model_dump_json().encode()
    other.write_bytes(other.read_bytes() + timed.model_dump_json().encode() + b"\n" + half[: len(half) // 3])

    assert main(["batch", "--resume", str(run), "--quiet"]) == 0
    capsys.readouterr()
    for task_id, (events, end) in _sessions(run).items():
        assert end.timing_pending == 0 and end.success, task_id
        assert Counter(e.iteration for e in events if isinstance(e, Timed)) == {2: 1}, task_id
    assert append_timing(path, 2, late) is None  # appended already: never twice
    doc, _said = metrics_json(run, capsys)
    assert doc["final"] and doc["timings_pending"] == 0
    (group,) = doc["groups"]
    assert group["pass@k"] == 1.0 and group["n_tasks"] == 10


def test_the_lane_prepares_several_timings_per_gpu_side_by_side(
    fresh: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one timing holds the GPU alone, the lane's other workers are already at work on theirs (what
    a timing builds first runs before its hold: measured on the H200, one worker per GPU left the GPU idle
    most of the time, docs/scheduling.md). The first three late timings meet before their hold: they get
    through only when three workers serve one GPU; the holds themselves stay one at a time."""
    from beavertui.batch.placement import ScheduledToolchain

    meet = threading.Barrier(3, timeout=60)
    lock = threading.Lock()
    seen = {"calls": 0, "held": 0, "most_held": 0}
    outer, inner = ScheduledToolchain.time_later, RecordedToolchain.time_later

    def before_hold(self: Any, *args: Any) -> Iterator[Any]:
        with lock:
            seen["calls"] += 1
            first = seen["calls"] <= 3
        if first:
            meet.wait()
        yield from outer(self, *args)

    def in_hold(self: Any, *args: Any) -> Iterator[Any]:
        with lock:
            seen["held"] += 1
            seen["most_held"] = max(seen["most_held"], seen["held"])
        try:
            yield from inner(self, *args)
        finally:
            with lock:
                seen["held"] -= 1

    monkeypatch.setattr(ScheduledToolchain, "time_later", before_hold)
    monkeypatch.setattr(RecordedToolchain, "time_later", in_hold)
    assert main(_argv(fresh, "side", "--gpus", "0")) == 0
    assert "failed" not in capsys.readouterr().err
    assert seen == {"calls": 10, "held": 0, "most_held": 1}
    ends = [end for _e, end in _sessions(fresh / "runs" / "side").values()]
    assert len(ends) == 10 and all(end.timing_pending == 0 and end.success for end in ends)


def test_the_lane_s_stages_come_before_every_session_s_at_the_build_slots() -> None:
    """A lane timing is the last step of a finished session: what it builds before its hold is served before
    the builds of sessions still in their loops (on a fresh H100 the first timing waited 31.8 s with no timing
    stage running while new sessions built their start checks)."""
    from beavertui.batch.build_slots import BuildSlots
    from beavertui.batch.rank import LANE_RANK, SESSION_RANK
    from beavertui.batch.timing_lane import TimingLane

    builds = BuildSlots(1)
    order: list[str] = []
    busy, queued = threading.Event(), threading.Event()

    class Lane(TimingLane):
        def _time(self, path: Path, iteration: int) -> SessionEnd | None:
            order.append(f"lane asked at rank {SESSION_RANK.get()}")
            with builds.hold():  # as a timing's build before its hold
                order.append("lane built")
            return None

    def session(rank: int) -> None:
        SESSION_RANK.set(rank)
        with builds.hold():
            order.append(f"session {rank} built")
            if rank == 0:
                busy.set()
                assert queued.wait(10)

    first = threading.Thread(target=session, args=(0,))
    first.start()
    assert busy.wait(10)
    later = threading.Thread(target=session, args=(1,))
    later.start()
    assert builds.wait_queued(1, 10)  # a newer session's build waits for the slot
    lane = Lane(RecordedToolchain({}), {}, workers=1)
    lane._queue.put((Path("session.jsonl"), 2))
    assert builds.wait_queued(2, 10)
    queued.set()
    first.join()
    later.join()
    lane.close()
    assert order == ["session 0 built", f"lane asked at rank {LANE_RANK}", "lane built", "session 1 built"]
