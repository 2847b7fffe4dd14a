"""GPU tests of a batch's timing beside a run made again alone for its memory (run on an H200 by
scripts/gpu-tests.sh): the run is a real process holding all but a few GiB of the GPU's memory, registered
with the batch's GPU pool as such a rerun is; the timing stage is the batch toolchain's, on the native
fixture vec_scale (two 512 MiB buffers a timing process).

- with room left beside the run, the timing stops it (SIGSTOP), measures, and continues it;
- with too little left, the timing runs out of memory beside the stopped run and is made again once the
  run has ended, holding the GPU's memory, and gets its speedup.

With ``BEAVER_GPU_RECORD`` set to a folder, each test writes what it saw there as JSON (the timing's note,
speedup and method, how long the rerun was stopped, the pool's grants in order), to be kept under
tests/data/ as the record of a run on the GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.placement import scheduled_local
from beavertui.batch.rank import SESSION_RANK
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.host import sandbox
from beavertui.engine.host.gpu import wait_idle
from beavertui.engine.session.events import Timed, Verdict
from beavertui.engine.timing.speedup import TimingConfig
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

pytestmark = pytest.mark.gpu
DATA = Path(__file__).parents[2] / "data"

#: Holds all but ``argv[1]`` GiB of the GPU's memory and runs 1 ms kernels until the file ``argv[2]``
#: appears (at most ``argv[3]`` seconds), as a rerun alone that keeps its GPU memory.
HOG = r"""
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>
__global__ void spin(long long cycles) { long long t0 = clock64(); while (clock64() - t0 < cycles) {} }
int main(int argc, char** argv) {
    double leave_gib = atof(argv[1]), max_s = atof(argv[3]);
    cudaFree(0);
    size_t free_b = 0, total = 0;
    cudaMemGetInfo(&free_b, &total);
    size_t leave = (size_t)(leave_gib * 1073741824.0), want = free_b > leave ? free_b - leave : 0;
    void* p = nullptr;
    if (cudaMalloc(&p, want) != cudaSuccess || cudaMemset(p, 1, want) != cudaSuccess) { printf("HOG FAIL\n"); return 2; }
    cudaMemGetInfo(&free_b, &total);
    printf("HOG READY held_gib=%.2f free_gib=%.2f\n", want / 1073741824.0, free_b / 1073741824.0);
    fflush(stdout);
    timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long kernels = 0;
    for (;;) {
        spin<<<1, 1>>>(2000000);
        cudaDeviceSynchronize();
        ++kernels;
        if (access(argv[2], F_OK) == 0) break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > max_s) break;
    }
    printf("HOG DONE kernels=%ld\n", kernels);
    return 0;
}
"""


@pytest.fixture(scope="module")
def hog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hog")
    (folder / "hog.cu").write_text(HOG)
    subprocess.run(["nvcc", "-O2", "-o", "hog", "hog.cu"], cwd=folder, check=True)
    return folder / "hog"


class Rerun:
    """Another session's run made again alone for its memory: ``command`` (which prints a line starting
    "HOG READY" once it holds its memory, and ends once ``folder``/stop exists) holding the GPU alone through
    the pool, its process registered as the batch registers a run's."""

    def __init__(self, pool: GpuPool, command: str, folder: Path) -> None:
        self.pool, self.command, self.folder = pool, command, folder
        self.stop_file = folder / "stop"
        self.ready = threading.Event()
        self.started: sandbox.Started | None = None
        self.outcome: Any = None
        self.line = ""
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(120) and self.error is None, self.error

    def _run(self) -> None:
        SESSION_RANK.set(0)  # the oldest session's
        try:
            with self.pool.hold(exclusive=True, memory=True) as g:
                self.started = sandbox.start(
                    self.command, self.folder, dict(os.environ), 300, keep=(str(self.folder),)
                )
                with self.pool.running(g, self.started):
                    assert self.started.until(b"HOG READY", 60)
                    self.ready.set()
                    self.outcome = self.started.finish()
        except BaseException as exc:
            self.error = exc
            self.ready.set()

    def end(self) -> None:
        self.stop_file.touch()
        self.thread.join(120)
        assert not self.thread.is_alive() and self.error is None, self.error
        assert self.outcome is not None and self.outcome.rc == 0, self.outcome

    def held_line(self) -> str:
        assert self.outcome is not None
        return str(next(ln for ln in self.outcome.log.splitlines() if ln.startswith("HOG READY")))


def hog_command(hog: Path, leave_gib: float, folder: Path) -> str:
    return f"{hog} {leave_gib} {folder / 'stop'} 240"


@contextmanager
def rerun_before_timing(tool: LocalToolchain, command: str, folder: Path) -> Iterator[list[Rerun]]:
    """The rerun takes the GPU once the attempt's run and sanitizer runs are done, just before its timing."""
    reruns: list[Rerun] = []
    measure = tool._measure

    def rerun_then_measure(*a: Any, **kw: Any) -> Any:
        if not reruns:
            reruns.append(Rerun(tool.placement.pool, command, folder))
        return measure(*a, **kw)

    tool._measure = rerun_then_measure  # type: ignore[method-assign]
    try:
        yield reruns
    finally:
        for r in reruns:
            r.stop_file.touch()


def _tool(tmp_path: Path) -> LocalToolchain:
    pool = GpuPool(["0"], quiet=wait_idle)
    pool.log = []
    timing = TimingConfig(cache=tmp_path / "cache")
    return scheduled_local(pool, BuildSlots(2), None, LocalConfig(base_dir=tmp_path / "work", timing=timing))


def _record(name: str, seen: dict[str, Any]) -> None:
    folder = os.environ.get("BEAVER_GPU_RECORD")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(json.dumps(seen, indent=1) + "\n")


def _attempt(tool: LocalToolchain) -> tuple[Timed, Verdict, float]:
    task = load_corpus(DATA / "native").get("vec_scale")
    began = time.monotonic()
    code = task.reference()
    assert code is not None
    events = list(tool.attempt(task, code, AttemptOptions(iteration=1, gate=0.7)))
    wall = time.monotonic() - began
    [timed] = [e for e in events if isinstance(e, Timed)]
    verdict = events[-1]
    assert isinstance(verdict, Verdict)
    return timed, verdict, wall


def test_a_timing_that_fits_beside_a_memory_rerun_stops_it_instead_of_waiting(
    hog: Path, tmp_path: Path
) -> None:
    tool = _tool(tmp_path)
    with rerun_before_timing(tool, hog_command(hog, 24.0, tmp_path), tmp_path) as reruns:
        timed, v, wall = _attempt(tool)
        [rerun] = reruns
        assert rerun.thread.is_alive()  # timed while the rerun still held the GPU: not waited for
        assert rerun.started is not None
        paused_s = rerun.started.paused_s()
        rerun.end()
    note = timed.result.note or ""
    print(f"timing beside the rerun ({rerun.held_line()}): {timed.result.speedup:.3f}x; {note}")
    assert timed.result.rerun_stopped and timed.result.runs_stopped == 1
    assert timed.result.timed_again is None
    assert v.correct and v.success and 0.9 < (v.speedup or 0) < 1.1
    assert paused_s > 0 and rerun.started.paused_s() == paused_s  # stopped for the timing only
    assert "HOG DONE" in rerun.outcome.log
    assert [x for x in tool.placement.pool.log or [] if x[0] == "pause"] == [
        ("pause", "memory", 1 << 62, "0")
    ]
    _record(
        "fits",
        {
            "rerun": rerun.held_line(),
            "rerun_stopped_s": round(paused_s, 3),
            "attempt_wall_s": round(wall, 3),
            "note": note,
            "speedup": timed.result.speedup,
            "method": timed.result.method,
            "pool_log": tool.placement.pool.log,
        },
    )


def test_a_timing_out_of_memory_beside_a_stopped_rerun_is_made_again_once_it_ends(
    hog: Path, tmp_path: Path
) -> None:
    tool = _tool(tmp_path)
    ended_at: list[float] = []

    def end_once_the_timing_waits_again(reruns: list[Rerun]) -> None:
        # the second timing request, holding the GPU's memory, waits for the rerun: end the rerun then
        assert tool.placement.pool.wait_queued(1, 300)
        ended_at.append(time.monotonic())
        reruns[0].stop_file.touch()

    with rerun_before_timing(tool, hog_command(hog, 0.25, tmp_path), tmp_path) as reruns:
        measure = tool._measure

        def watched(*a: Any, **kw: Any) -> Any:
            threading.Thread(target=end_once_the_timing_waits_again, args=(reruns,), daemon=True).start()
            return measure(*a, **kw)

        tool._measure = watched  # type: ignore[method-assign]
        timed, v, wall = _attempt(tool)
        [rerun] = reruns
        rerun.end()
    note = timed.result.note or ""
    print(f"timing beside the rerun ({rerun.held_line()}): {timed.result.speedup:.3f}x; {note}")
    assert timed.result.timed_again is not None and "out of memory" in timed.result.timed_again
    assert v.correct and v.success and 0.9 < (v.speedup or 0) < 1.1
    assert ended_at and tool.placement.pool.gpus[0].failures == []
    kinds = [(w, k) for w, k, _r, _g in tool.placement.pool.log or [] if k in ("exclusive", "memory")]
    assert (
        kinds.count(("pause", "memory")) == 1 and kinds.count(("grant", "exclusive")) == 3
    )  # rerun, 2 timings
    _record(
        "out-of-memory",
        {
            "rerun": rerun.held_line(),
            "attempt_wall_s": round(wall, 3),
            "note": note,
            "speedup": timed.result.speedup,
            "method": timed.result.method,
            "pool_log": tool.placement.pool.log,
        },
    )
