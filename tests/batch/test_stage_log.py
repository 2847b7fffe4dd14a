"""The run's stage log (stages.jsonl, rundir.log_stage): every build slot and GPU hold a batch's placement
gave, with when it was asked for, granted and given back, so that a GPU run's waits can be read afterwards."""

from __future__ import annotations

import json
import shutil
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
    assert d["gpus"]["0"] == {"instrumented": 10.0, "idle, stages waiting": 3.0, "exclusive": 2.0}
    # of the timing's 9 s wait: 7 s behind the sanitizer run, 2 s with the GPU idle
    assert d["timing_waits_s"] == {"instrumented": 7.0, "idle, stages waiting": 2.0}
    assert "timing stages waited behind: instrumented 7.0 s" in stage_log_bench.render(d)
