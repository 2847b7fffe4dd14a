"""How a timing is made: rounds, runs, limits, the cache and the start-ahead choices (TimingConfig).

The engine reads no environment: the four settings users give as environment variables
(``BEAVERTUI_TIMING``, ``BEAVERTUI_SIDE_BUDGET_MS``, ``BEAVERTUI_PRESTART``, ``BEAVERTUI_GO_AT_EXIT``) are read
and checked once where a command starts (service/environment.py) and arrive here as TimingConfig's fields;
the defaults below are what an unset variable means."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.errors import BeaverError

#: In-process timing: with a budget, a side's round stops once it took that long (host time) and at least 5
#: launches were timed (native.py). Measured on the H200 (docs/lab/h200-2026-12-03.md, ``scripts/gpu-timing-bench.sh
#: --part cap``): reduce_01's broken start, a 471 ms kernel, timed in 4.7 s instead of 12.3 s at the same speedup.
SIDE_BUDGET_MS = 2000.0

#: Which process-level timings start each run ahead of its turn: ``all`` (the default: CUPTI runs, and the
#: runs of a family timed by its testbench's own speed lines, all three parked at once: Timer._parked_together;
#: measured on the H200 on the 9 cufft_samples tasks, stages of 8.98 s against 17.19 s in turn, each speedup
#: 0.966 to 1.034 times its value in turn: docs/lab/h200-2026-12-04.md), ``cupti`` (CUPTI runs only; the testbench's
#: runs in turn) or ``off``.
PRESTART_CHOICES = ("cupti", "all", "off")
#: The default of TimingConfig.prestart.
PRESTART = "all"


@dataclass(frozen=True)
class TimingConfig:
    """How many timed runs and where caches live."""

    rounds: int = 3
    """Interleaved (reference, candidate) rounds of the benchmark command (native contract)."""
    process_runs: int = 10
    """Most runs of each side for process-level methods (cupti, ncu): one sample per run."""
    min_process_runs: int = 3
    """Fewest runs of each side for process-level methods before sampling may stop (adaptive.py)."""
    target_halfwidth: float = 0.02
    """Process-level methods stop sampling once the speedup's 95% interval is within this fraction."""
    stage_s: float = 300.0
    """Time limit of one benchmark command, seconds."""
    cache: Path | None = None
    """Cache dir (reference builds, CUPTI library); default ~/.cache/beavertui."""
    method: str | None = None
    """Force ``beaver_time_ms``, ``cupti`` or ``ncu``; None picks the best available."""
    nvtx_range: str | None = None
    """ncu only: profile only kernels inside this NVTX push/pop range (``--nvtx --nvtx-include``)."""
    inprocess: bool = True
    """Time native tasks that declare ``timing_driver`` with both sides in one process (native.py) instead of
    one process per side and round. On unless ``BEAVERTUI_TIMING=process`` (measured on the H200:
    docs/lab/h200-2026-12-03.md)."""
    side_budget_ms: float = SIDE_BUDGET_MS
    """In-process timing: the most host time one side's round takes once 5 launches were timed (2000 ms by
    default; 0: every launch of every round; ``BEAVERTUI_SIDE_BUDGET_MS``)."""
    prestart: str = PRESTART
    """Process-level timing: ``all`` (CUPTI runs and a testbench's own speed lines), ``cupti`` or ``off``.
    Each run is started while the one before it runs, and waits inside the CUPTI injection library, before
    CUDA has made a context, until that run has ended (cupti/beaver_cupti.c). One timed process is past its
    CUDA start at a time, as before; what a process does before its first CUDA call (its start, loading
    libraries, importing torch) leaves the serial part (``BEAVERTUI_PRESTART``)."""
    go_at_exit: bool = False
    """With runs started ahead (prestart), a CUPTI run is let go once the run before it has written its exit
    mark (its kernels done and their records written, at exit) instead of once its process has ended (the
    context's teardown, a median 0.115 s a run on the H200). Off unless ``BEAVERTUI_GO_AT_EXIT=1``: on the
    H200 (12 tasks, docs/lab/h200-2026-12-04.md) a run's share of a stage was shorter, but its CUDA part ran slower
    beside the ending run and one stage was measured again for its CV."""
    go_s: float = 900.0
    """kernelbench: the longest a timing driver started ahead of the GPU hold (Timer.warm) waits for its go
    before it gives up and exits (a backstop: the timer ends an unused one first, Timer.close)."""

    def __post_init__(self) -> None:
        if self.prestart not in PRESTART_CHOICES:
            raise BeaverError(f"prestart {self.prestart!r}: expected one of {', '.join(PRESTART_CHOICES)}")
        if not 0 <= self.side_budget_ms < math.inf:
            raise BeaverError(f"side budget {self.side_budget_ms!r} ms: expected milliseconds >= 0 (0: off)")
