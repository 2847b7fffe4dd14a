"""Speedup as docs/metrics.md describes it: the candidate timed against the task's reference on this GPU.

Timer is the one object callers hold: it picks the task's timing method (registry.py: the family's method,
or TimingConfig.method) and hands each step to it. The methods, each a TimingMethod (method.py):

- ``beaver_time_ms`` (inprocess.py, interleaved.py): the native contract, the task's benchmark_command
  printing ``BEAVER_TIME_MS <ms>`` per timed launch; with TimingConfig.inprocess on a task that declares
  ``timing_driver``, both sides in one timing process (native.py, ``native_inprocess``);
- ``cupti`` and ``ncu`` (interleaved.py): kernel records injected into the unmodified test command, or
  ncu's ``gpu__time_duration.sum`` when CUPTI cannot be used;
- ``torch_events_l2flush_interleaved`` (kernelbench.py): kernelbench's timing driver;
- ``testbench_lines`` (lines.py): the testbench's own speed lines.

They share one TimedRuns (runs.py: starting and ending timed processes, the candidate-failure rerun), the
reference's cached build (reference.py) and the statistics and one TimingResult constructor (samples.py).
Baselines are stored per GPU signature (baselines.py). This module never classifies.

Anti-cheat side (anticheat.py): every corpus harness checks the output of its last timed launch against that
launch's own fresh inputs and exits non-zero when it is wrong, so a candidate benchmark run that fails after
printing its samples is flagged ``cached_result``; one that fails before any sample (right only at the
correctness size) raises CandidateTimingFailed, a failure of the candidate rather than of the machine. The
flags travel in TimingResult.flags.
"""

from __future__ import annotations

import time

from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import StageResult, TimingResult
from beavertui.engine.session.legacy import DRIVER_PHASES
from beavertui.engine.stage import stages
from beavertui.engine.timing.config import TimingConfig
from beavertui.engine.timing.inprocess import RULES
from beavertui.engine.timing.kernelbench import DRIVER_TAG, KERNELBENCH_DRIVER, KernelbenchDriver
from beavertui.engine.timing.lines import TestbenchLines
from beavertui.engine.timing.method import TimingMethod
from beavertui.engine.timing.reference import (
    ReferenceTiming,
    adopt_reference_build,
    refbuild_dir,
    reference_key,
    reference_workdir,
)
from beavertui.engine.timing.registry import default_method, method_for
from beavertui.engine.timing.runs import TimedRuns
from beavertui.engine.timing.samples import (
    CandidateTimingFailed,
    SpeedupUnavailable,
    parse_ncu_csv,
    parse_times,
    phases_note,
    stats,
    timing_command,
)

__all__ = [
    "DRIVER_PHASES",
    "DRIVER_TAG",
    "KERNELBENCH_DRIVER",
    "RULES",
    "CandidateTimingFailed",
    "SpeedupUnavailable",
    "Timer",
    "TimingConfig",
    "adopt_reference_build",
    "parse_ncu_csv",
    "parse_times",
    "phases_note",
    "refbuild_dir",
    "reference_key",
    "reference_workdir",
    "stats",
    "time_reference",
    "timing_command",
]  # fmt: skip


class Timer:
    """Times a candidate work dir against the task's reference on this GPU, through its TimingMethod.

    A kernelbench timer may hold a driver process started ahead of the GPU hold (prepare_candidate), and a
    testbench's timer its runs parked before CUDA: close() (or leaving ``with timer:``) ends them when no
    timing used them."""

    def __init__(self, task: Task, config: stages.StageConfig, tcfg: TimingConfig | None = None) -> None:
        self.task = task
        self.ctx = TimedRuns(task, config, tcfg or TimingConfig())
        self.how: TimingMethod = method_for(self.tcfg.method or default_method(task) or "none", self.ctx)
        """The timing method (registry.py)."""

    def __enter__(self) -> Timer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> stages.StageConfig:
        """The runs' config: a batch sets the GPU it holds before each step."""
        return self.ctx.config

    @config.setter
    def config(self, value: stages.StageConfig) -> None:
        self.ctx.config = value

    @property
    def tcfg(self) -> TimingConfig:
        """How many timed runs, the limits and the cache."""
        return self.ctx.tcfg

    @tcfg.setter
    def tcfg(self, value: TimingConfig) -> None:
        self.ctx.tcfg = value

    @property
    def method(self) -> str:
        """TimingResult.method of the next timing (``ncu`` once a CUPTI timing fell back to it)."""
        return self.how.name

    @property
    def runs(self) -> list[tuple[str, StageResult]]:
        """Every benchmark run of the latest measure(): (``reference`` or ``candidate``, its stage result)."""
        return self.ctx.runs

    @property
    def phases(self) -> list[dict[str, object]]:
        """Where each run of the latest measure() spent its time (process-level methods: Run.phases)."""
        return self.ctx.phases

    @property
    def gate_broken(self) -> str | None:
        """Why runs are no longer started ahead of their turn, or None."""
        return self.ctx.gate_broken

    @property
    def builds(self) -> bool:
        """Whether measure() needs the reference built in its own work dir first (prepare())."""
        return self.how.builds

    @property
    def prepares(self) -> bool:
        """Whether prepare() builds anything: the reference, or the library that parks a testbench's runs."""
        return self.how.prepares

    @property
    def warms(self) -> bool:
        """Whether prepare_candidate starts the timing driver ahead of the GPU hold (kernelbench)."""
        return self.how.warms

    @property
    def parks(self) -> bool:
        """Whether prepare_candidate starts a testbench's timed runs ahead of the GPU hold, parked before CUDA."""
        return self.how.parks

    @property
    def inprocess(self) -> bool:
        """Whether measure() times both sides in one process (native.py)."""
        return self.how.inprocess

    @property
    def gated(self) -> bool:
        """Whether runs are started ahead of their turn (TimingConfig.prestart; not once gate_broken)."""
        return self.how.gated

    def close(self) -> None:
        """End a driver or runs started ahead of the GPU hold that no timing used (nothing when none is)."""
        self.how.close()

    def prepare(self) -> None:
        """Build what measure() needs, so that it builds nothing while the GPU is held for timing: the
        reference's work dir (cached per reference, harness and toolkit) and, for CUPTI and for a
        testbench's runs parked together, the injection library. Raises SpeedupUnavailable when the
        reference does not build here, and BeaverError when the CUPTI library does not build and there is
        no ncu to fall back to; otherwise that failure is remembered and measure() goes straight to ncu."""
        self.how.prepare()

    def prepare_candidate(self, cand: stages.WorkDir, park: bool = True) -> None:
        """What the candidate's timing can do before the GPU is held (the batch does this on a build slot, so
        that the hold is spent timing): build its side library for the in-process method, start the
        kernelbench driver up to its go, or, with ``park``, start a testbench's timed runs and park them
        before CUDA (the config must then name the GPU the hold will give). Nothing when none applies."""
        self.how.prepare_candidate(cand, park)

    def prepare_reference(self, wait: bool = True) -> None:
        """time_reference's counterpart of prepare_candidate: the reference-only kernelbench driver started in
        the reference's work dir up to its go (``wait=False``: started, not waited for)."""
        self.how.prepare_reference(wait)

    def warm(self, work: stages.WorkDir, reference_only: bool = False, wait: bool = True) -> bool:
        """kernelbench: start the timing driver in ``work`` up to its go (KernelbenchDriver.warm); False for
        any other method."""
        self.close()
        how = self.how
        return isinstance(how, KernelbenchDriver) and how.warm(work, reference_only, wait)

    def park(self, work: stages.WorkDir) -> bool:
        """A testbench's speed lines: start its timed runs in ``work`` and park them before CUDA
        (TestbenchLines.park); False for any other method or when they cannot start."""
        self.close()
        how = self.how
        return isinstance(how, TestbenchLines) and how.park(work)

    def kernelbench_samples(self, work: stages.WorkDir, reference_only: bool = False) -> dict[str, object]:
        """kernelbench: the timing driver's result object for ``work`` (KernelbenchDriver.samples)."""
        how = self.how
        if not isinstance(how, KernelbenchDriver):
            raise SpeedupUnavailable(f"{self.method} timing has no kernelbench driver")
        return how.samples(work, reference_only)

    def measure(self, cand: stages.WorkDir, gate: float | None = None) -> TimingResult:
        """Interleaved timing; re-measured once when either CV is above 3%. With a ``gate``, a candidate whose
        first (reference, candidate) round is below half the gate, both CVs under 3%, is not timed further:
        the remaining rounds cannot bring it near the gate, and a degenerate candidate (often hundreds of
        times slower) would otherwise hold the GPU for every round. The result's note says so. The result
        records how long the measurement took (``wall_s``)."""
        start = time.monotonic()
        self.ctx.phases = []
        result = self.how.measure(cand, gate)
        return result.model_copy(update={"wall_s": round(time.monotonic() - start, 3)})


def time_reference(timer: Timer) -> ReferenceTiming:
    """Time the task's reference alone with the timer's method; re-measured once when CV is above 3%."""
    return timer.how.time_reference()
