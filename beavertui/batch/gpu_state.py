"""The bookkeeping of a batch's GPUs: each GPU's state and each request for one, as the pool keeps them."""

from __future__ import annotations

from dataclasses import dataclass, field

from beavertui.batch.rank import Pausable, next_seq
from beavertui.engine.toolchain.placement import Pause


@dataclass
class GpuState:
    """Bookkeeping of one GPU."""

    index: str
    shared: int = 0
    exclusive: bool = False
    waiting_exclusive: int = 0
    """Timing requests now waiting for this GPU to drain (it admits no new shared run meanwhile, but for a
    backfill: GpuPool._fits)."""
    long_runs: int = 0
    """Shared runs in flight that were asked for as long (sanitizer runs)."""
    instrumented: int = 0
    """Shared runs in flight whose kernels run instrumented (sanitizer and profiler runs): stopped, their
    kernels in flight may run on for tens of seconds."""
    started: dict[int, float] = field(default_factory=dict)
    """When each shared run in flight was granted (by request number), on the pool's clock."""
    expect: dict[int, float] = field(default_factory=dict)
    """The expected seconds of the shared runs in flight that came with an expectation (by request number)."""
    consecutive_failures: int = 0
    healthy: bool = True
    busy_since: float | None = None
    busy_s: float = 0.0
    runs: int = 0
    failures: list[str] = field(default_factory=list)
    attached: dict[int, Pausable] = field(default_factory=dict)
    """The processes of shared runs in flight that the pool may stop, registered by each run's stage while it
    runs (GpuPool.running)."""
    paused: list[Pausable] = field(default_factory=list)
    """Those stopped now for the timing stage that holds the GPU alone (continued when it is released)."""
    memory_hold: bool = False
    """The GPU is held alone by a run made again alone for its memory (its process, once registered, is in
    ``attached``)."""
    over_memory: bool = False
    """A timing stage holds the GPU over that run, stopped for it (the run's hold goes on after the timing's)."""
    pause: Pause | None = None
    """For the timing stage that holds the GPU: what was stopped for it (None: nothing was)."""
    futile: set[int] = field(default_factory=set)
    """The registered processes (by key) that were stopped once while the GPU did not go idle: a kernel of
    theirs kept running with its host stopped (one that hangs, likely). While one of them runs, no timing
    stage stops the GPU's runs again: each would wait out the idle check in turn, holding the GPU alone and
    every other run off it, and the hung run's time limit, which a stop extends, would never come."""


@dataclass
class Request:
    exclusive: bool
    long: bool
    rank: int
    expect_s: float | None = None
    instrumented: bool = False
    memory: bool = False
    """An exclusive hold for a run made again alone because it ran out of memory beside other runs: it never
    stops the GPU's runs (a stopped process keeps its GPU memory) and comes after every timing request."""
    seq: int = field(default_factory=next_seq)
    granted: GpuState | None = None
    failed: bool = False
    paused: int = 0
    """Shared runs stopped for this timing request when it was granted."""
    no_pause: bool = False
    """The GPU did not go idle after stopping its runs once: this request waits for a drain."""
    over_memory: bool = False
    """This timing request was granted over a run made again alone for its memory, stopped for it."""
    idle_s: float = 0.0
    """How long to wait for the GPU to go idle after stopping its runs (GpuPool.idle_wait_s)."""

    def order(self) -> tuple[bool, bool, int, int]:
        return (not self.exclusive, self.memory, self.rank, self.seq)


def kind(req: Request) -> str:
    return "exclusive" if req.exclusive else "long" if req.long else "shared"
