"""The run's stage log (stages.jsonl, rundir.log_stage): every build slot and GPU hold a batch's placement
gave, with when it was asked for, granted and given back, so that a GPU run's waits can be read afterwards."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.cache import CompileCache
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.placement import PoolPlacement, scheduled_local
from beavertui.batch.rank import SESSION_RANK
from beavertui.batch.rundir import STAGE_LOG, log_stage
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.errors import ToolchainError
from beavertui.engine.stage.stages import StageConfig
from beavertui.engine.toolchain.base import AttemptOptions

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"
sys.path.insert(0, str(ROOT / "bench"))

import stage_log_bench  # noqa: E402


def _log(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / STAGE_LOG).read_text(encoding="utf-8").splitlines()]


def test_a_timing_stage_that_waited_for_a_run_says_how_long_and_behind_what(tmp_path: Path) -> None:
    task = load_corpus(CORPUS).get("vec_scale")
    place = PoolPlacement(GpuPool(["0"]), BuildSlots(1), None, partial(log_stage, tmp_path))
    running, asked = threading.Event(), threading.Event()

    def session_run() -> None:
        SESSION_RANK.set(0)
        with place.gpu("run", StageConfig(), task):
            running.set()
            assert asked.wait(10)
            assert place.pool.wait_queued(1, 10)  # the timing stage waits behind this run
            time.sleep(0.2)  # ... at least this long (under load, longer)

    t = threading.Thread(target=session_run)
    t.start()
    assert running.wait(10)
    asked.set()
    with place.gpu("timing", StageConfig(), task) as lease:  # the timing lane's: no session rank
        assert lease.gpu == "0"
    t.join()
    by_stage = {e["stage"]: e for e in _log(tmp_path)}  # each line written as its stage ends, in any order
    run, timing = by_stage["run"], by_stage["timing"]
    assert (run["stage"], run["task"], run["gpu"], run["rank"]) == ("run", "vec_scale", "0", 0)
    assert (timing["stage"], timing["gpu"], timing["rank"]) == ("timing", "0", None)
    assert run["asked"] <= run["began"] <= run["ended"]
    # granted only once the run gave the GPU back: its wait is in the log
    assert run["began"] <= timing["asked"] <= run["ended"] and timing["began"] <= timing["ended"]
    assert timing["began"] - timing["asked"] >= 0.19


def test_a_stage_that_found_no_gpu_left_is_logged_without_a_grant(tmp_path: Path) -> None:
    task = load_corpus(CORPUS).get("vec_scale")
    pool = GpuPool(["0"], fail_limit=1)
    pool.report(pool.gpus[0], ok=False, detail="gone")
    place = PoolPlacement(pool, BuildSlots(1), None, partial(log_stage, tmp_path))
    with pytest.raises(ToolchainError, match="no healthy GPU"), place.gpu("run", StageConfig(), task):
        pass
    (entry,) = _log(tmp_path)
    assert entry["stage"] == "run" and "began" not in entry and entry["asked"] <= entry["ended"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_real_attempt_logs_its_build_then_its_run(tmp_path: Path) -> None:
    from tests.conftest import gpu_present

    if gpu_present():
        pytest.skip("needs a machine without a working GPU (the run fails with the driver's error)")
    task = load_corpus(CORPUS).get("vec_scale")
    code = task.reference()
    assert code is not None
    tc = scheduled_local(
        GpuPool(["0"]), BuildSlots(1), CompileCache(tmp_path / "cache"), on_stage=partial(log_stage, tmp_path)
    )
    for it in (1, 2):
        with pytest.raises(ToolchainError):
            list(tc.attempt(task, code, AttemptOptions(iteration=it)))
    stages = [(e["stage"], e.get("cached", False)) for e in _log(tmp_path)]
    # the second build of the same code came from the compile cache; each run held GPU 0
    assert stages == [("build", False), ("run", False), ("build", True), ("run", False)]
    assert all(e["gpu"] == "0" for e in _log(tmp_path) if e["stage"] == "run")


def test_the_summary_splits_a_timing_wait_by_what_held_the_gpu(tmp_path: Path) -> None:
    # one GPU, times set by hand: a sanitizer run 0-10 s, a correctness run 2-4 s beside it, a timing asked at
    # 3 s and granted at 12 s (the GPU idle 10-12 s while it waited), a build that came from the cache
    for e in [
        {"stage": "sanitize", "task": "a", "gpu": "0", "rank": 0, "asked": 0.0, "began": 0.0, "ended": 10.0},
        {"stage": "run", "task": "b", "gpu": "0", "rank": 1, "asked": 2.0, "began": 2.0, "ended": 4.0},
        {"stage": "timing", "task": "b", "gpu": "0", "asked": 3.0, "began": 12.0, "ended": 14.0},
        {"stage": "build", "task": "c", "rank": 2, "asked": 1.0, "began": 1.5, "ended": 1.6, "cached": True},
        {"stage": "run", "task": "c", "rank": 2, "asked": 13.0, "ended": 15.0},  # cut while it waited
        {"stage": "prepare", "task": "b", "asked": 1.2, "began": 2.0, "ended": 2.5},  # its wait overlaps c's
    ]:
        log_stage(tmp_path, e)
    d = stage_log_bench.summary(tmp_path)
    assert d["span_s"] == 15.0
    assert d["stages"]["timing"]["wait_max_s"] == 9.0 and d["stages"]["run"]["never_granted"] == 1
    assert d["stages"]["build"]["cached"] == 1 and d["build_waiting_s"] == 1.0
    assert d["gpus"]["0"] == {
        "exclusive": 2.0, "instrumented": 10.0, "runs": 0.0, "idle while stages waited": 3.0, "idle": 0.0
    }  # fmt: skip
    # of the timing's 9 s wait: 7 s behind the sanitizer run, 2 s with the GPU idle
    assert d["timing_waits_s"] == {"instrumented": 7.0, "idle while stages waited": 2.0}
    assert "timing stages waited behind: instrumented 7.0 s" in stage_log_bench.render(d)


def _a_small_log(run_dir: Path) -> None:
    """One GPU, times set by hand (s): a build 0-2 (the GPU idle 0-1, nothing asked of it); run a asked at 1,
    held 2-6, run b 3-5 beside it; timing t1 asked at 4, held 6-14; run c asked at 7, held only at 18-19, behind
    t1 and timing t2 (asked at 12, held 14-18); a sanitizer run 19-21; the GPU idle 21-22; run d asked at 22,
    never granted (the run cut at 25)."""
    for e in [
        {"stage": "build", "task": "a", "rank": 0, "asked": 0.0, "began": 0.0, "ended": 2.0},
        {"stage": "run", "task": "a", "gpu": "0", "rank": 0, "asked": 1.0, "began": 2.0, "ended": 6.0},
        {"stage": "run", "task": "b", "gpu": "0", "rank": 1, "asked": 3.0, "began": 3.0, "ended": 5.0},
        {"stage": "timing", "task": "a", "gpu": "0", "rank": -1, "asked": 4.0, "began": 6.0, "ended": 14.0},
        {"stage": "run", "task": "c", "gpu": "0", "rank": 2, "asked": 7.0, "began": 18.0, "ended": 19.0},
        {"stage": "timing", "task": "b", "gpu": "0", "rank": -1, "asked": 12.0, "began": 14.0, "ended": 18.0},
        {
            "stage": "sanitize",
            "task": "c",
            "gpu": "0",
            "rank": 2,
            "asked": 19.0,
            "began": 19.0,
            "ended": 21.0,
        },
        {"stage": "run", "task": "d", "rank": 3, "asked": 22.0, "ended": 25.0},
    ]:
        log_stage(run_dir, e)


def test_the_summary_splits_the_whole_span_and_gives_idle_its_seconds(tmp_path: Path) -> None:
    _a_small_log(tmp_path)
    d = stage_log_bench.summary(tmp_path)
    split = d["gpus"]["0"]
    # idle at both ends of the GPU's stages too (0-1 s and 21-22 s): the five states add up to the span
    assert split == {
        "exclusive": 12.0,
        "instrumented": 2.0,
        "runs": 5.0,
        "idle while stages waited": 4.0,
        "idle": 2.0,
    }
    assert sum(split.values()) == d["span_s"] == 25.0
    assert d["placed"] == {"0": {"timing": 2, "instrumented_at_once": 1}}
    assert "GPU 0 held 2 timing stages and ran at most 1 sanitizer or profiler runs at once" in (
        stage_log_bench.render(d)
    )
    # every state by name and seconds: no name with a comma of its own in the comma-separated line
    assert (
        "GPU 0: exclusive 12.0 s, instrumented 2.0 s, runs 5.0 s, idle while stages waited 4.0 s, idle 2.0 s"
        in stage_log_bench.render(d).splitlines()
    )


def test_the_summary_says_where_timing_went_and_how_many_sanitizer_runs_ran_at_once(tmp_path: Path) -> None:
    """Two GPUs, times set by hand (s): on GPU 1 a sanitizer run 0-4 and a profile 2-6 beside it (two at once,
    as with ``--pause-for-timing all``), another sanitizer run 6-8 beginning as the profile ends (not at once);
    on GPU 0 two timing stages and a sanitizer run; a sanitizer run never granted counts nowhere."""
    for e in [
        {"stage": "sanitize", "task": "a", "gpu": "1", "rank": 0, "asked": 0.0, "began": 0.0, "ended": 4.0},
        {"stage": "profile", "task": "b", "gpu": "1", "rank": 1, "asked": 1.0, "began": 2.0, "ended": 6.0},
        {"stage": "sanitize", "task": "c", "gpu": "1", "rank": 2, "asked": 5.0, "began": 6.0, "ended": 8.0},
        {"stage": "timing", "task": "a", "gpu": "0", "rank": -1, "asked": 1.0, "began": 1.0, "ended": 3.0},
        {"stage": "timing", "task": "b", "gpu": "0", "rank": -1, "asked": 2.0, "began": 3.0, "ended": 5.0},
        {"stage": "sanitize", "task": "d", "gpu": "0", "rank": 3, "asked": 5.0, "began": 5.0, "ended": 7.0},
        {"stage": "sanitize", "task": "e", "rank": 4, "asked": 6.0, "ended": 9.0},
    ]:
        log_stage(tmp_path, e)
    d = stage_log_bench.summary(tmp_path)
    assert d["placed"] == {
        "0": {"timing": 2, "instrumented_at_once": 1}, "1": {"timing": 0, "instrumented_at_once": 2}
    }  # fmt: skip
    assert "GPU 1 held 0 timing stages and ran at most 2 sanitizer or profiler runs at once" in (
        stage_log_bench.render(d)
    )


def test_the_timeline_gives_each_window_what_held_the_gpu_and_what_waited(tmp_path: Path) -> None:
    _a_small_log(tmp_path)
    d = stage_log_bench.timeline(tmp_path, 10.0)
    assert d["span_s"] == 25.0 and d["kinds"] == ["run", "sanitize", "timing"]
    rows = d["gpus"]["0"]
    assert [(r["from_s"], r["to_s"]) for r in rows] == [(0.0, 10.0), (10.0, 20.0), (20.0, 25.0)]
    # held: the union of each kind's holds (runs a and b side by side 2-6 s count 4 s)
    assert [r["held_s"] for r in rows] == [
        {"run": 4.0, "sanitize": 0.0, "timing": 4.0},
        {"run": 1.0, "sanitize": 1.0, "timing": 8.0},
        {"run": 0.0, "sanitize": 1.0, "timing": 0.0},
    ]
    assert [r["idle_s"] for r in rows] == [2.0, 0.0, 4.0]
    # waiting: a (1-2 s), c (7-18 s), t1 (4-6 s) in the first; b was granted at once and never waited
    assert [r["waiting"] for r in rows] == [
        {"run": 2, "sanitize": 0, "timing": 1},
        {"run": 1, "sanitize": 0, "timing": 1},
        {"run": 1, "sanitize": 0, "timing": 0},
    ]
    assert [r["longest_wait_s"] for r in rows] == [3.0, 11.0, 3.0]  # c by 10 s, c granted at 18 s, d by 25 s
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "stage_log_bench.py"), "timeline", str(tmp_path), "--window", "10"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert out[3].split() == [
        "window",
        "s",
        "run",
        "sanitize",
        "timing",
        "idle",
        "|",
        "waiting",
        "run",
        "sanitize",
        "timing",
        "longest",
    ]
    assert out[5].split() == ["10-20", "1.0", "1.0", "8.0", "0.0", "|", "1", "0", "1", "11.0", "s"]
    bad = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "stage_log_bench.py"), "timeline", str(tmp_path), "--window", "0"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode != 0 and bad.stderr.strip().splitlines() == [
        "--window 0: a window is a positive number of seconds"
    ]
