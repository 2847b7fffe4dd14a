"""bench/batch_bench.py lane: the scheduler's own objects with every correct attempt timed inline against
timed by the real timing lane after the session's loop, over the fixture's stage times (time scaled down)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("batch_bench", ROOT / "bench" / "batch_bench.py")
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_lane_mode_times_the_same_attempts_after_the_loops() -> None:
    a = argparse.Namespace(
        stages="fixture", tasks=3, iterations=5, scale=0.001, timing_s=2.0, model_s=0.0, gpus=1,
        gpu_share=4, cores_per_gpu=16,
    )  # fmt: skip
    got = bench.lane(a)
    assert (got["tasks"], got["iterations"]) == (3, 5)
    for design in ("inline", "lane"):
        r = got[design]
        # the five replies: a build error, then four that run, of which two (slow, reference) are correct
        assert r["attempts"] == 15 and r["passed"] == 3, design
        assert r["wait_s"]["run"]["n"] == 12 and r["wait_s"]["timing"]["n"] == 6, design
        assert r["sessions"]["final"] == 3, design
        # every timing stage follows its own attempt's run: the GPU went from runs to timing 1 to 6 times
        assert 1 <= r["runs_to_timing"] <= 6, design
    inline, lane = got["inline"], got["lane"]
    assert "lane" not in inline  # each timing inside its session: a session is final when its loop ends
    assert inline["sessions"]["loop_end_s"]["max"] == inline["sessions"]["last_final_s"]
    # every correct attempt was left pending by its session and timed by the lane, none failed
    assert lane["lane"] == {"appended": 6, "failed": 0}
    assert lane["sessions"]["loop_end_s"]["max"] <= lane["sessions"]["last_final_s"]


def test_runs_to_timing_counts_each_gpus_switches_from_runs_to_a_timing_and_its_grants() -> None:
    from beavertui.batch.gpu_pool import GpuPool

    pool = GpuPool(["0", "1"])
    pool.log = [
        ("grant", "exclusive", 0, "0"),  # a GPU's first hold: no runs drained for it
        ("grant", "shared", 1, "0"),
        ("grant", "shared", 2, "1"),
        ("release", "shared", 1, "0"),
        ("grant", "exclusive", 3, "0"),  # runs, then timing: 1
        ("grant", "exclusive", 4, "0"),  # timing after timing: none
        ("grant", "long", 5, "1"),
        ("grant", "exclusive", 6, "1"),  # runs (a long one last), then timing on the other GPU: 2
    ]
    assert bench.drains(pool) == 2
    assert bench.grants_by_gpu(pool) == {"run": {"0": 1, "1": 2}, "timing": {"0": 3, "1": 1}}
    pool.log = None
    assert bench.drains(pool) == 0


def test_lane_mode_over_the_release_stage_times_finishes_all_65_sessions_on_two_gpus() -> None:
    """--stages release: the H200 release batch's 65 sessions, each correct attempt's timing stage as timed
    alone; every session is final in both designs, and each timing stage held a GPU."""
    a = argparse.Namespace(
        stages="release", scale=0.001, model_s=0.0, gpus=2, gpu_share=4, cores_per_gpu=16,
    )  # fmt: skip
    got = bench.lane(a)
    assert (got["tasks"], got["iterations"], got["gpus"]) == (65, 2, 2)
    assert got["timing_stages_from"] == {"alone": 65, "batch": 0, "median": 0}
    for design in ("inline", "lane"):
        r = got[design]
        assert (r["attempts"], r["passed"], r["sessions"]["final"]) == (130, 65, 65), design
        assert r["wait_s"]["timing"]["n"] == 65, design
        assert sum(r["by_gpu"]["timing"].values()) == 65 and sum(r["by_gpu"]["run"].values()) == 100, design
    assert got["lane"]["lane"] == {"appended": 65, "failed": 0}
