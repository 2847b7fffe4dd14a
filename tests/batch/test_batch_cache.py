"""The scheduled local toolchain on this machine: real nvcc builds, the compile cache, and a GPU that fails
every run being taken out of the schedule. Without a GPU every run fails with the driver's own error, which
is exactly the "GPU failing every run" case."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.cache import CompileCache, cache_key
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.placement import scheduled_local
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import ToolchainError
from beavertui.engine.session.events import Event
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalToolchain

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "recorded"


def test_cache_key_depends_on_every_part() -> None:
    base = cache_key("code", "harness", "nvcc x.cu", "13.0")
    assert (
        len(
            {
                base,
                cache_key("code2", "harness", "nvcc x.cu", "13.0"),
                cache_key("code", "harness2", "nvcc x.cu", "13.0"),
                cache_key("code", "harness", "nvcc -O3 x.cu", "13.0"),
                cache_key("code", "harness", "nvcc x.cu", "12.4"),
            }
        )
        == 5
    )
    assert cache_key("code", "harness", "nvcc x.cu", "13.0") == base


def _until_gpu_failure(tc: LocalToolchain, task: Task, code: str, it: int) -> list[Event]:
    """The events of an attempt whose run the GPU failed: the build and the run, then no verdict."""
    events: list[Event] = []
    with pytest.raises(ToolchainError, match=r"GPU 0 failed: .*(driver|CUDA-capable|probe)") as info:
        for e in tc.attempt(task, code, AttemptOptions(iteration=it)):
            events.append(e)
    assert info.value.source == "gpu"
    assert all(e.kind != "verdict" for e in events)
    return events


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_identical_candidate_is_built_once_and_a_failing_gpu_is_removed(tmp_path: Path) -> None:
    from tests.conftest import gpu_present

    if gpu_present():
        pytest.skip("needs a machine without a working GPU (every run must fail)")
    task = load_corpus(CORPUS).get("vec_scale")
    pool = GpuPool(["0"], fail_limit=3)
    cache = CompileCache(tmp_path / "cache")
    tc = scheduled_local(pool, BuildSlots(1), cache)
    code = task.reference()
    assert code is not None
    first = _until_gpu_failure(tc, task, code, 1)
    second = _until_gpu_failure(tc, task, code, 2)
    b1, r1 = first[0], first[1]
    b2, r2 = second[0], second[1]
    assert (b1.kind, b1.result.rc, b1.result.cached) == ("build", 0, False)  # type: ignore[attr-defined]
    assert (b2.kind, b2.result.rc, b2.result.cached) == ("build", 0, True)  # type: ignore[attr-defined]
    assert b2.result.log == b1.result.log  # type: ignore[attr-defined]
    # the cached binary was restored into the new work dir: it ran and failed the same way
    assert r2.kind == "run" and r2.result.log == r1.result.log and r1.result.rc not in (0, 127)  # type: ignore[attr-defined]
    assert cache.summary() == {"hits": 1, "misses": 1, "stored": 1, "corrupt": 0}
    assert pool.gpus[0].consecutive_failures == 2 and pool.gpus[0].healthy
    _until_gpu_failure(tc, task, code, 3)
    assert not pool.gpus[0].healthy  # three runs in a row failed for the GPU, not the candidate
    assert pool.exhausted.is_set()
    with pytest.raises(ToolchainError, match="no healthy GPU"):
        list(tc.attempt(task, code, AttemptOptions(iteration=4)))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.slow
def test_a_build_bound_to_its_work_dir_is_made_again_not_restored_from_the_cache(tmp_path: Path) -> None:
    """The applied runner's pre-build (torch's extension builder, absolute paths in its build files) is not
    served from the compile cache into another work dir, where the test run would compile it again while it
    holds a GPU slot; an ordinary build is."""
    from dataclasses import replace

    from beavertui.engine.corpus import families
    from beavertui.engine.stage import stages

    task = load_corpus(CORPUS).get("vec_scale")
    # the same build, as a task of an applied family of the release (families/applied.py) would make it
    applied = replace(task, layout="release", family="flashattention", level="applied_kernels_class")
    assert families.build_is_path_bound(applied) and not families.build_is_path_bound(task)
    cache = CompileCache(tmp_path / "cache")
    tc = scheduled_local(GpuPool(["0"]), BuildSlots(1), cache)
    code = task.reference()
    assert code is not None
    cfg = tc.stage_config()

    def cached(t: Task) -> bool:
        with stages.workdir(t, code, cfg) as work:
            res = tc.placement.build(t, code, work, cfg, lambda c: stages.build(work, c))
            assert res.rc == 0, res.log
            return res.cached

    assert [cached(applied), cached(applied), cached(task), cached(task)] == [False, False, False, True]
    assert cache.summary() == {"hits": 1, "misses": 1, "stored": 1, "corrupt": 0}
