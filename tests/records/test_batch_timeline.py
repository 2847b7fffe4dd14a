"""bench/batch_timeline.py on the recorded release batch (tests/data/release_batch.tar.gz, three H200 runs):
the numbers docs/lab/h200-2026-12-01.md quotes for the third run come out of the session files, a kept check of
a broken start, which no session file holds, is counted from its startlogs file, and the correct attempts a
cut run left waiting for their timing stage are counted with what they waited behind."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import batch_timeline as bt  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("timeline")
    with tarfile.open(ROOT / "tests" / "data" / "release_batch.tar.gz") as tar:
        tar.extractall(root, filter="data")
    return root / "run"


def _the_third_runs_timeline_is_what_the_performance_doc_says(run: Path) -> None:
    doc = bt.analyse(bt.segment(bt.events_of(run), bt.last_start(run)))
    assert doc["sessions_ended"] == 7 and doc["span_s"] == pytest.approx(496.4, abs=0.1)
    assert doc["timing"]["count"] == 4 and doc["timing"]["sum_s"] == pytest.approx(161.0, abs=0.1)
    assert doc["quiet"]["longest_s"] == pytest.approx(149.0, abs=0.1)
    assert doc["timing_wait"]["max_s"] == pytest.approx(298.8, abs=0.1)


def test_a_kept_start_check_is_counted_and_ends_a_quiet_stretch(run: Path, tmp_path: Path) -> None:
    evs = bt.segment(bt.events_of(run), bt.last_start(run))
    t0 = evs[0][0]
    logs = tmp_path / "startlogs" / "gpu"
    logs.mkdir(parents=True)
    # a check that ran from 340 s to 400 s of the stretch: inside the 149 s with no stage ending
    check = {"key": "k", "task": "cuda_198", "began": t0 + 340.0, "made": t0 + 400.0, "log": "x",
             "stages": [{"stage": "build", "duration_s": 2.0, "rc": 0, "timed_out": False},
                        {"stage": "run", "duration_s": 58.0, "rc": None, "timed_out": True}]}  # fmt: skip
    (logs / "a.json").write_text(json.dumps(check))
    old = dict(check, made=t0 - 10.0)  # made before the stretch: left out
    (logs / "b.json").write_text(json.dumps(old))
    bare = {"key": "k", "made": t0 + 100.0, "log": "x"}  # kept by an older version: says nothing of its cost
    (logs / "c.json").write_text(json.dumps(bare))
    checks = bt.start_checks(tmp_path / "startlogs", t0, evs[-1][0])
    assert [c["task"] for c in checks] == ["cuda_198"]
    doc = bt.analyse(evs, checks)
    sc = doc["start_checks"]
    assert sc["count"] == 1 and sc["wall_sum_s"] == 60.0 and sc["stages"]["run"]["sum_s"] == 58.0
    assert sc["longest"] == [{"task": "cuda_198", "wall_s": 60.0, "began_s": 340.0}]
    assert doc["quiet"]["longest_s"] < 149.0  # the check's end splits the stretch


def _attempts_still_waiting_to_be_timed_and_what_they_waited_behind(run: Path) -> None:
    """The third run was cut with correct attempts waiting for their timing stage: they are counted, with
    how long they had waited, and the minute-long applied-kernels runs on the GPU meanwhile are named."""
    doc = bt.analyse(bt.segment(bt.events_of(run), bt.last_start(run)))
    still = doc["timing_still_waiting"]
    assert still["count"] == 13
    assert still["longest"][0] == {
        "task": "cufft_samples_c2c_1d_1024_fp64__perf_broken__95baf9e2", "waiting_s": 338.0, "since_s": 158.5,
    }  # fmt: skip
    behind = doc["timing_behind"]
    assert [x["duration_s"] for x in behind] == [54.7, 54.6, 54.2, 45.9]
    assert all(x["task"].startswith("cufft_samples_") and x["stage"] == "run" for x in behind)


def test_an_attempt_judged_by_its_start_check_is_counted_apart(tmp_path: Path) -> None:
    """The stages of an attempt that resubmitted the broken start ran in the check (which --startlogs
    counts): they are not counted again as the attempt's, and the count of such attempts is reported."""
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.session.events import Built, Ran
    from beavertui.engine.session.protocol import Protocol
    from tests.engine.loop.test_loop_session import _sh, _sleepy

    task, tool, _ran = _sleepy(tmp_path)
    replies = [_sh(task.broken_start()), _sh(task.reference() or "")]
    items = list(run_session(task, ScriptedModel(replies), tool, Protocol(budget=2)))
    run = tmp_path / "run"
    run.mkdir()
    (run / "sleepy__s0.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in items))
    doc = bt.analyse(bt.events_of(run))
    assert doc["reused_attempts"] == 1
    fresh = [e for e in items if isinstance(e, (Built, Ran)) and e.result.reused is None]
    assert fresh and {e.iteration for e in fresh} == {2}
    assert doc["stages"]["build"]["count"] + doc["stages"]["run"]["count"] == len(fresh)


def test_checks_cut_in_flight_are_counted_with_the_stages_they_had_finished(
    run: Path, tmp_path: Path
) -> None:
    """A check's in-flight note (loop/startlog.py) that the check's end never removed: the check was cut
    with its process, and the timeline says what it had cost; a note from before the stretch is not counted,
    and neither is a note among the finished checks."""
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.loop import startlog
    from beavertui.engine.session.events import GpuSignature

    evs = bt.segment(bt.events_of(run), bt.last_start(run))
    t0 = evs[0][0]
    task = load_corpus(ROOT / "tests" / "data" / "release_real").get("cuda_59__logic_error__501f0dd2")
    gpu = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")
    cache = tmp_path / "cache"
    stages: list[dict[str, object]] = [
        {"stage": "build", "duration_s": 90.0, "rc": 0, "timed_out": False},
        {"stage": "run", "duration_s": 30.0, "rc": 1, "timed_out": False},
    ]
    startlog.in_flight(cache, task, gpu, "d1", t0 + 50.0, stages)
    startlog.in_flight(cache, task, gpu, "d0", t0 - 500.0, stages[:1])  # an earlier machine's
    cut = bt.cut_checks(cache / "startlogs", t0)
    assert len(cut) == 1 and bt.start_checks(cache / "startlogs", t0, evs[-1][0]) == []
    doc = bt.analyse(evs, [], cut)["start_checks_cut"]
    assert (
        doc["count"] == 1 and doc["stages"]["build"]["sum_s"] == 90.0 and doc["stages"]["run"]["count"] == 1
    )
    (first,) = doc["earliest"]
    assert first["task"] == task.id and first["began_s"] == 50.0 and first["stages_done"] == 2
    startlog.done(cache, task, gpu, "d1")
    assert bt.cut_checks(cache / "startlogs", t0) == []


#: The fields version 2 added to a timing (a version-1 file has none of them: its note said them in words).
V2_TIMING_FIELDS = (
    "floor_ms", "remeasured", "gpu", "runs_stopped", "rerun_stopped", "idle_s", "builds_stopped", "timed_again",
    "driver_phases_s", "driver_before_go",
)  # fmt: skip


@pytest.mark.parametrize("version", [2, 1])
@pytest.mark.parametrize("rerun", [False, True])
def test_builds_stopped_for_timing_are_counted_apart_from_stopped_runs(
    tmp_path: Path, rerun: bool, version: int
) -> None:
    """A timing stage may stop the runs on its GPU (or the run made again alone for its memory that holds
    it) and the other sessions' builds (--builds-in-timing): each is counted as what it was, from the
    stages' paused_s and the timing's fields; a version-1 file, whose timing said them in its note only,
    counts the same."""
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.session.events import Built, Ran, SessionHeader, Timed
    from beavertui.engine.session.protocol import Protocol
    from beavertui.engine.toolchain.local import with_stops
    from beavertui.engine.toolchain.placement import Lease, Pause
    from tests.engine.loop.test_loop_session import _sh, _sleepy

    task, tool, _ran = _sleepy(tmp_path)
    items = list(run_session(task, ScriptedModel([_sh(task.reference() or "")]), tool, Protocol(budget=1)))
    assert any(isinstance(e, Timed) for e in items)
    lines = []
    for e in items:
        if isinstance(e, Built):
            e = e.model_copy(update={"result": e.result.model_copy(update={"paused_s": 1.5})})
        elif isinstance(e, Ran):
            e = e.model_copy(update={"result": e.result.model_copy(update={"paused_s": 0.5})})
        elif isinstance(e, Timed):
            lease = Lease(tool.stage_config(), gpu="0")
            lease.pause = Pause("0", runs=1, rerun=rerun, idle_s=0.3)
            e = e.model_copy(update={"result": with_stops(e.result, lease, 3, "CUDA out of memory")})
            assert (
                e.result.runs_stopped == 1
                and e.result.rerun_stopped == rerun
                and e.result.builds_stopped == 3
            )
        doc = e.model_dump(mode="json")
        if version == 1 and isinstance(e, SessionHeader):
            doc["format_version"] = 1
        if version == 1 and isinstance(e, Timed):
            for name in V2_TIMING_FIELDS:
                del doc["result"][name]
        lines.append(json.dumps(doc) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "sleepy__s0.jsonl").write_text("".join(lines))
    doc = bt.analyse(bt.events_of(run))
    assert doc["paused"] == {
        "count": 1, "sum_s": 0.5, "median_s": 0.5, "timing_stages_that_stopped_runs": 0 if rerun else 1,
    }  # fmt: skip
    assert doc["timing_over_reruns_alone"] == (1 if rerun else 0)
    assert doc["builds_paused"] == {
        "count": 1, "sum_s": 1.5, "median_s": 1.5, "timing_stages_that_stopped_builds": 1,
    }  # fmt: skip
    assert doc["timed_again_for_memory"] == 1 and doc["reruns_alone"]["count"] == 0


def test_the_recorded_release_batch_reads_back(run: Path) -> None:
    """The recorded release batch (tests/data/release_batch.tar.gz) read back through bench/batch_timeline.py, one check each.
    It fails only if the archive or the bench scripts that read it change."""
    _the_third_runs_timeline_is_what_the_performance_doc_says(run)
    _attempts_still_waiting_to_be_timed_and_what_they_waited_behind(run)
