"""Where an attempt's stages run: the seam between LocalToolchain and whoever else uses this machine.

LocalToolchain (the one attempt path of every mode) asks its placement for a build slot, for a GPU to share
(a correctness run), for a GPU for an instrumented run (sanitizer, profiler), and for a GPU alone (a run made
again for its memory, a timing), and tells it how each GPU stage went. The placement only says where and
when; what runs and how it is judged are the toolchain's.

- ``Placement`` places nothing: every stage runs at once, on whatever GPU the environment shows (``live``,
  ``check``, ``branch``: one session on the machine).
- ``GpuSlots`` caps the GPU stages of several toolchains at once with a semaphore, while their builds go on
  (``corpus validate --gpu-jobs``).
- The batch's pool (batch/placement.py ``PoolPlacement``) queues stages by kind and session over its GPUs
  and build slots.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from beavertui.engine.session.events import StageResult
from beavertui.engine.stage import stages

if TYPE_CHECKING:
    from beavertui.engine.corpus.task import Task

#: What a GPU stage asks for: ``run`` a correctness run (the GPU may be shared), ``alone`` a correctness run
#: made again holding the GPU alone (it ran out of memory beside other runs), ``sanitize`` compute-sanitizer
#: runs, ``profile`` a profiler run (and the sanitizer runs beside it), ``timing`` the GPU alone for timing,
#: ``timing_memory`` the same, made again once the runs stopped for the first one (keeping their memory)
#: have ended.
GpuUse = Literal["run", "alone", "sanitize", "profile", "timing", "timing_memory"]


@dataclass(frozen=True)
class Pause:
    """What a timing stage stopped (SIGSTOP) on its GPU and continued after it (the batch's pool)."""

    gpu: str
    runs: int
    """Runs stopped (the run made again alone for its memory counts one)."""
    rerun: bool
    """What was stopped was the run made again alone for its memory."""
    idle_s: float
    """Seconds from the stop until no kernel ran on the GPU."""

    def note(self) -> str:
        """The same in words, for the timing's note."""
        what = (
            "the run made again alone for its memory"
            if self.rerun
            else f"{self.runs} run{'s' if self.runs != 1 else ''}"
        )
        return (
            f"{what} on GPU {self.gpu} stopped (SIGSTOP) for this timing, continued after it; no kernel ran on "
            f"the GPU {self.idle_s:.1f} s after the stop"
        )


class Lease:
    """One GPU stage's place: the stage's configuration there and what the placement saw meanwhile."""

    def __init__(self, config: stages.StageConfig, gpu: str | None = None) -> None:
        self.config = config
        """The configuration the stage runs with (its GPU named in ``CUDA_VISIBLE_DEVICES`` where placed)."""
        self.gpu = gpu
        """The GPU's index; None: whatever GPU the environment shows."""
        self.pause: Pause | None = None
        """The runs stopped for this hold (a timing's fields and note say it); None: none were."""
        self.shared = False
        """Whether other runs were on the GPU at some point while the stage ran (known after ``took``)."""

    @property
    def stopped_runs(self) -> bool:
        """Whether runs were stopped for this hold (they keep their GPU memory meanwhile)."""
        return self.pause is not None

    @property
    def where(self) -> str:
        """The GPU in words: "GPU 0", or "the GPU"."""
        return f"GPU {self.gpu}" if self.gpu is not None else "the GPU"

    def took(self, *results: StageResult) -> None:
        """How the stage (or stages) held here went; a placement that learns run lengths reads it."""


class Placement:
    """No placement: every stage runs at once, where the environment says (one session on this machine)."""

    def build(
        self, task: Task, code: str, work: stages.WorkDir, cfg: stages.StageConfig,
        run: Callable[[stages.StageConfig], StageResult],
    ) -> StageResult:  # fmt: skip
        """The build of ``code`` in ``work``: ``run`` with the build's configuration, on a build slot."""
        return run(cfg)

    @contextmanager
    def build_slot(self, cfg: stages.StageConfig) -> Iterator[stages.StageConfig]:
        """A build slot for what timing builds before its GPU hold; yields the configuration to build with."""
        yield cfg

    @contextmanager
    def gpu(self, use: GpuUse, cfg: stages.StageConfig, task: Task) -> Iterator[Lease]:
        """A GPU for one stage of ``task`` (``use``: what the stage is), held until the block ends."""
        yield Lease(cfg)

    @contextmanager
    def builds_stopped(self) -> Iterator[int]:
        """Around a timing measurement: stop what builds meanwhile; yields how many builds were stopped."""
        yield 0

    def ahead(self, cfg: stages.StageConfig) -> stages.StageConfig | None:
        """The configuration on the GPU the next timing hold will give, where that is known before the hold
        (runs may then be started ahead of it, parked before CUDA); None: not known."""
        return None

    def report(self, lease: Lease, ok: bool, detail: str = "") -> None:
        """How a GPU stage ended: ``ok`` False when the GPU failed it (``detail``: why)."""

    def learn_run_seconds(self, task_id: str, seconds: float, timed_out: bool = False) -> None:
        """How long a run of ``task_id`` took here before this toolchain ran one (a kept start check)."""


class GpuSlots(Placement):
    """At most ``slots``' count of GPU stages at once among the toolchains that share it; builds go on."""

    def __init__(self, slots: threading.Semaphore | None) -> None:
        self.slots = slots

    @contextmanager
    def gpu(self, use: GpuUse, cfg: stages.StageConfig, task: Task) -> Iterator[Lease]:
        if self.slots is None:
            yield Lease(cfg)
            return
        with self.slots:
            yield Lease(cfg)
