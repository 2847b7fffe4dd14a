"""Speedup as docs/metrics.md describes it: interleaved reference/candidate runs, median, CV.

Three ways to get samples, always named in TimingResult.method: the native contract (the task's
benchmark_command prints ``BEAVER_TIME_MS <ms>`` per timed run; or, with ``TimingConfig.inprocess`` on a
task that declares ``timing_driver``, both sides in one timing process: native.py, ``native_inprocess``),
CUPTI kernel records injected into the unmodified test command (``cupti``), or ncu's ``gpu__time_duration.sum`` (``ncu``) when CUPTI cannot be
used. The reference is built once per (reference, harness, toolkit) in a cached work dir. Baselines
are stored per GPU signature (baselines.py). This module never classifies.

Anti-cheat side of the native contract (anticheat.py): each timed run also prints ``BEAVER_HOST_MS`` (host
clock to a full device synchronisation), kept per sample in TimingResult but never used as a sample, for the
side-stream check against the reference timed in the same session. Every corpus harness checks the output
of its last timed launch against that launch's own fresh inputs and exits non-zero when it is wrong, so a
candidate benchmark run that fails after printing its samples is flagged ``cached_result``; one that fails
before any sample (right only at the correctness size) raises CandidateTimingFailed, a failure of the
candidate rather than of the machine. A candidate's CUPTI or ncu run, a testbench's run for its own speed
lines (each the task's own test command), or the kernelbench driver failing on the candidate's side, that
exits non-zero is the candidate's failure too when the test command, run again as the correctness run ran
it, fails again (Timer._candidate_failure). The flags travel in TimingResult.flags.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import shlex
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from beavertui.engine.corpus import families, harness
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.host.gpu import nvcc_version
from beavertui.engine.judge import anticheat
from beavertui.engine.judge.evidence import out_of_memory
from beavertui.engine.paths import cache_dir
from beavertui.engine.session.events import StageResult, TimingResult
from beavertui.engine.stage import stages
from beavertui.engine.timing import adaptive, cupti, native
from beavertui.engine.timing.parked import GateBroken, Run

#: One timed run's event time. ``BEAVER_HOST_MS`` lines (host time to a full device sync, anticheat.py)
#: are not samples: they only serve the side-stream check.
TIME_RE = re.compile(r"^BEAVER_TIME_MS\s+([0-9.eE+-]+)\s*$", re.M)
CV_LIMIT = 0.03
IMPLAUSIBLE = 10.0
#: Kernels of the framework around a Python harness (torch itself), not of the solution.
FRAMEWORK_KERNEL = re.compile(r"at::native::|at::cuda::|at_cuda_detail|c10::|\bvoid at::")


def stats(samples: list[float]) -> tuple[float, float]:
    """(median, coefficient of variation) of samples; CV is stdev/mean as a fraction."""
    if not samples:
        raise ValueError("no samples")
    med = statistics.median(samples)
    mean = statistics.fmean(samples)
    cv = statistics.stdev(samples) / mean if len(samples) > 1 and mean > 0 else 0.0
    return med, cv


def parse_times(log: str) -> list[float]:
    """Every ``BEAVER_TIME_MS`` value of a benchmark log, milliseconds."""
    out = []
    for m in TIME_RE.finditer(log):
        try:
            value = float(m.group(1))
        except ValueError:
            continue
        if math.isfinite(value) and value > 0:  # 0, negative, 1e999: not a time
            out.append(value)
    return out


def parse_ncu_csv(text: str) -> list[tuple[str, float]]:
    """(kernel name, milliseconds) per profiled kernel of ``ncu --csv --print-units base`` output."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = csv.DictReader(io.StringIO(text[start:]))
    out = []
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            value = float((row.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            continue
        unit = (row.get("Metric Unit") or "ns").strip()
        scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(
            unit, 1e-6
        )
        out.append((row.get("Kernel Name") or "?", value * scale))
    return out


_SANITIZER_WRAP = re.compile(
    r"\S*python3?\s+\S*run_sanitizer\.py\s+|\bcompute-sanitizer(?:\s+--?[\w-]+(?:[= ](?!\./)\S+)?)*\s+"
)


def timing_command(test_command: str) -> str:
    """The test command without a sanitizer wrapper (a harness that runs compute-sanitizer itself)."""
    return _SANITIZER_WRAP.sub("", test_command)


#: The environment setting that picks how native tasks are timed: ``inprocess`` (the default) or ``process``
#: (one process per side and round, the contract of earlier releases).
INPROCESS_ENV = "BEAVERTUI_TIMING"


def inprocess_default() -> bool:
    """In-process timing unless ``BEAVERTUI_TIMING=process``; any other value is an error (no typo falls back
    silently to one way or the other)."""
    value = os.environ.get(INPROCESS_ENV, "inprocess").strip() or "inprocess"
    if value not in ("inprocess", "process"):
        raise BeaverError(f"{INPROCESS_ENV}={value!r}: expected 'inprocess' or 'process'")
    return value == "inprocess"


SIDE_BUDGET_ENV = "BEAVERTUI_SIDE_BUDGET_MS"
#: In-process timing: with a budget, a side's round stops once it took that long (host time) and at least 5
#: launches were timed (native.py). Measured on the H200 (docs/performance.md, ``scripts/gpu-timing-bench.sh
#: --part cap``): reduce_01's broken start, a 471 ms kernel, timed in 4.7 s instead of 12.3 s at the same speedup.
SIDE_BUDGET_MS = 2000.0


def side_budget_default() -> float:
    """``BEAVERTUI_SIDE_BUDGET_MS`` (0: off), else 2000 ms; anything but milliseconds >= 0 is an error."""
    raw = os.environ.get(SIDE_BUDGET_ENV, "").strip()
    if not raw:
        return SIDE_BUDGET_MS
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise BeaverError(f"{SIDE_BUDGET_ENV}={raw!r}: expected milliseconds >= 0 (0 turns the budget off)")
    return value


PRESTART_ENV = "BEAVERTUI_PRESTART"
#: Which process-level timings start each run ahead of its turn: ``all`` (the default: CUPTI runs, and the
#: runs of a family timed by its testbench's own speed lines, all three parked at once: Timer._parked_together;
#: measured on the H200 on the 9 cufft_samples tasks, stages of 8.98 s against 17.19 s in turn, each speedup
#: 0.966 to 1.034 times its value in turn: docs/performance.md), ``cupti`` (CUPTI runs only; the testbench's
#: runs in turn) or ``off``.
PRESTART_CHOICES = ("cupti", "all", "off")


def prestart_default() -> str:
    """``BEAVERTUI_PRESTART``, else ``all``; any other value is an error."""
    value = os.environ.get(PRESTART_ENV, "").strip() or "all"
    if value not in PRESTART_CHOICES:
        raise BeaverError(f"{PRESTART_ENV}={value!r}: expected one of {', '.join(PRESTART_CHOICES)}")
    return value


#: ``1``: CUPTI runs started ahead are let go at the exit mark of the run before (TimingConfig.go_at_exit).
GO_AT_EXIT_ENV = "BEAVERTUI_GO_AT_EXIT"


def go_at_exit_default() -> bool:
    """``BEAVERTUI_GO_AT_EXIT``: ``1`` on, ``0`` or unset off; anything else is an error."""
    value = os.environ.get(GO_AT_EXIT_ENV, "").strip() or "0"
    if value not in ("0", "1"):
        raise BeaverError(f"{GO_AT_EXIT_ENV}={value!r}: expected 1 or 0")
    return value == "1"


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
    inprocess: bool = field(default_factory=inprocess_default)
    """Time native tasks that declare ``timing_driver`` with both sides in one process (native.py) instead of
    one process per side and round. On unless ``BEAVERTUI_TIMING=process`` (measured on the H200:
    docs/performance.md)."""
    side_budget_ms: float = field(default_factory=side_budget_default)
    """In-process timing: the most host time one side's round takes once 5 launches were timed (2000 ms by
    default; 0: every launch of every round; ``BEAVERTUI_SIDE_BUDGET_MS``)."""
    prestart: str = field(default_factory=prestart_default)
    """Process-level timing: ``all`` (CUPTI runs and a testbench's own speed lines), ``cupti`` or ``off``.
    Each run is started while the one before it runs, and waits inside the CUPTI injection library, before
    CUDA has made a context, until that run has ended (cupti/beaver_cupti.c). One timed process is past its
    CUDA start at a time, as before; what a process does before its first CUDA call (its start, loading
    libraries, importing torch) leaves the serial part (``BEAVERTUI_PRESTART``)."""
    go_at_exit: bool = field(default_factory=go_at_exit_default)
    """With runs started ahead (prestart), a CUPTI run is let go once the run before it has written its exit
    mark (its kernels done and their records written, at exit) instead of once its process has ended (the
    context's teardown, a median 0.115 s a run on the H200). Off unless ``BEAVERTUI_GO_AT_EXIT=1``: on the
    H200 (12 tasks, docs/performance.md) a run's share of a stage was shorter, but its CUDA part ran slower
    beside the ending run and one stage was measured again for its CV."""
    go_s: float = 900.0
    """kernelbench: the longest a timing driver started ahead of the GPU hold (Timer.warm) waits for its go
    before it gives up and exits (a backstop: the timer ends an unused one first, Timer.close)."""


class SpeedupUnavailable(BeaverError):
    """No speedup can be measured, through no fault of the candidate nor of the machine: the reference does
    not build or time here, or the family has none. A correct attempt keeps its correctness; its speedup is
    null with this reason and it counts at p = 0 only."""


#: Prefix of the driver's result line.
DRIVER_TAG = "BEAVER_KB_TIMING "

#: The in-process kernelbench timing driver (a standalone script run with the task's interpreter).
KERNELBENCH_DRIVER = Path(__file__).with_name("kernelbench_driver.py")

#: The driver's lines when, started ahead of the GPU hold (``--go-file``), it is ready for its go and when it
#: took it (kernelbench_driver.py).
DRIVER_READY = "BEAVER_KB_READY"
DRIVER_GO = "BEAVER_KB_GO"

#: The longest Timer.warm waits for the driver to be ready (torch imported), seconds.
READY_S = 120.0

#: The environment a driver started ahead of the GPU hold may still take from its go: what the CUDA runtime
#: reads when it initialises, which the driver does only after the go (``CUDA_VISIBLE_DEVICES``). Any other
#: difference (a path, the interpreter's own settings) would come too late: the driver is started again.
LATE_ENV = re.compile(r"^CUDA_")


#: The kernelbench driver's phases, in the order it runs them (kernelbench_driver.py, ``phases_s``).
DRIVER_PHASES = (
    ("import", "torch import"), ("inputs_sized", "inputs sized (too large to keep while waiting)"),
    ("inputs_dropped", "inputs made and dropped (too large to keep)"),
    ("inputs", "inputs made"), ("waited_for_go", "waiting for the GPU"), ("inputs_gpu", "inputs made on the GPU"),
    ("models", "models built"), ("to_device", "inputs copied to the GPU"), ("warmup", "warm-up"),
    ("trials", "timed trials"),
)  # fmt: skip


def phases_note(doc: dict[str, object]) -> str:
    """``; host seconds: torch import 2.1, ...`` from the driver's ``phases_s`` (empty without them). The
    phases a driver started ahead of the GPU hold ran before its go (``before_go``: the torch import and the
    wait) are named apart: ``; host seconds before the GPU was held: torch import 3.5, ...; with it held: ...``."""
    phases = doc.get("phases_s")
    if not isinstance(phases, dict):
        return ""
    before = doc.get("before_go")
    early = set(before) if isinstance(before, list) else set()
    parts = [
        (k in early, f"{label} {float(phases[k]):.1f}")
        for k, label in DRIVER_PHASES
        if isinstance(phases.get(k), (int, float))
    ]
    if not parts:
        return ""
    if not early:
        return f"; host seconds: {', '.join(text for _, text in parts)}"
    held = ", ".join(text for ahead, text in parts if not ahead) or "none"
    ahead = ", ".join(text for ahead, text in parts if ahead)
    return f"; host seconds before the GPU was held: {ahead}; with it held: {held}"


def default_method(task: Task) -> str | None:
    """The timing method a task's family calls for (None: the family has no reference to time against)."""
    speed = families.semantics(task).speed
    if speed == "kernelbench_driver":
        return "torch_events_l2flush_interleaved"
    if speed == "testbench_lines":
        return "testbench_lines"
    if speed == "none":
        return None
    return "beaver_time_ms" if task.benchmark_command else "cupti"


def reference_key(task: Task) -> str:
    ref = task.reference() or ""
    h = hashlib.sha256(ref.encode())
    h.update(harness.harness_hash(task).encode())
    h.update((nvcc_version() or "").encode())
    return h.hexdigest()[:20]


def _refbuild_dir(task: Task, tcfg: TimingConfig) -> Path:
    """Where the reference build of this task, harness and toolkit is cached."""
    return (tcfg.cache or cache_dir()) / "refbuild" / f"{task.id[:60]}-{reference_key(task)}"


def reference_workdir(task: Task, config: stages.StageConfig, tcfg: TimingConfig) -> stages.WorkDir:
    """The reference built in its own work dir, cached per reference + harness + toolkit."""
    code = families.reference_submission(task)
    if code is None:
        raise SpeedupUnavailable(f"{task.id}: {families.why_no_reference_submission(task)}")
    final = _refbuild_dir(task, tcfg)
    root = final.parent
    if (final / ".beaver-built").is_file():
        return stages.WorkDir(path=final, task=task, manifest={}, links={})
    root.mkdir(parents=True, exist_ok=True)
    as_run = families.for_code(task, code)
    work = stages.prepare(as_run, code, root)
    result = stages.build(work, config)
    if result.rc != 0:
        stages.remove(work)
        last = [ln for ln in result.log.splitlines() if ln.strip()][-1:] or ["(no output)"]
        raise SpeedupUnavailable(f"{task.id}: the reference does not build here ({last[0][:200]})")
    (work.path / ".beaver-built").write_text((result.command or "") + "\n")
    if final.exists():
        shutil.rmtree(final, ignore_errors=True)
    try:
        work.path.rename(final)
    except OSError:
        return work  # another process won the race; use this copy
    return stages.WorkDir(path=final, task=task, manifest={}, links={})


def adopt_reference_build(task: Task, tcfg: TimingConfig, work: stages.WorkDir, build_command: str) -> None:
    """Keep an already built and passing reference work dir as the cached reference build (no rebuild)."""
    final = _refbuild_dir(task, tcfg)
    if (final / ".beaver-built").is_file():
        stages.remove(work)
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    (work.path / ".beaver-built").write_text(build_command + "\n")
    try:
        shutil.move(str(work.path), str(final))
    except OSError:
        stages.remove(work)  # reference_workdir builds it again when timing needs it


Sampler = Callable[[stages.WorkDir], tuple[list[float], StageResult]]

#: The timing methods whose candidate run that fails is told from the machine's failure by running the task's
#: test command again (Timer._candidate_failure).
PLAIN_RERUN = ("cupti", "ncu", "testbench_lines", "torch_events_l2flush_interleaved")


class CandidateTimingFailed(BeaverError):
    """The candidate's own timing run failed its harness's check before any timed launch (for example a
    candidate that is right at the correctness size only): a failure of the candidate, not of the machine."""

    def __init__(self, result: StageResult, evidence: str) -> None:
        super().__init__(f"the candidate's timing run failed (rc {result.rc}): {evidence}")
        self.result = result
        self.evidence = evidence


class _CandidateNoSamples(BeaverError):
    """A candidate's CUPTI run or testbench run that gave no samples, raised out of a chain of runs started
    ahead or parked (which ends them) so that Timer._candidate_failure can decide whose failure it was."""

    def __init__(self, error: BeaverError, result: StageResult) -> None:
        super().__init__(str(error))
        self.error = error
        self.result = result


@dataclass
class _Warm:
    """A kernelbench driver started ahead of the GPU hold, waiting for its go (Timer.warm)."""

    work: Path
    reference_only: bool
    stage: stages.StartedStage
    go: Path
    """The file whose appearance is its go."""
    config: stages.StageConfig
    """The timer's config when it was started, its environment and pausable aside (_as_run)."""
    ready: bool = True
    """Whether its ready line was seen (warm(wait=False) leaves that to the go)."""


def _as_run(config: stages.StageConfig) -> stages.StageConfig:
    """What of ``config`` a process started ahead of the GPU hold must share with the hold's: all but its
    environment (the GPU comes with the go: LATE_ENV) and who may stop it meanwhile (a batch's build slots
    before the hold, nothing in it)."""
    return replace(config, env=None, pausable=None)


@dataclass
class _Ahead:
    """A testbench's timed runs started ahead of the GPU hold and parked before CUDA (Timer.park)."""

    work: Path
    runs: list[Run]
    cuda_env: dict[str, str]
    """The CUDA_ variables they were started with (CUDA_VISIBLE_DEVICES: the GPU they will use)."""
    parking_s: float = 0.0
    """Seconds from their start until all were parked at their gates (or the wait's end), before the hold."""


_T = TypeVar("_T")


class Timer:
    """Times a candidate work dir against the task's reference on this GPU.

    A kernelbench timer may hold a driver process started ahead of the GPU hold (warm, prepare_candidate), and
    a testbench's timer its runs parked before CUDA (park): close() (or leaving ``with timer:``) ends them when
    no timing used them."""

    def __init__(self, task: Task, config: stages.StageConfig, tcfg: TimingConfig | None = None) -> None:
        self.task = task
        self.config = config
        self.tcfg = tcfg or TimingConfig()
        self.method = self.tcfg.method or default_method(task) or "none"
        self._lib: Path | None = None
        self._lib_error: str | None = None
        self.runs: list[tuple[str, StageResult]] = []
        """Every benchmark run of the latest measure(): (``reference`` or ``candidate``, its stage result)."""
        self.stopped_early: str | None = None
        """Why the latest measure() stopped after its first round, or None."""
        self.library: StageResult | None = None
        """The candidate's side library when the caller built it before timing (prepare_candidate)."""
        self.native = True
        """False once the in-process method is known not to apply here (a build it needs failed)."""
        self.native_why: str | None = None
        """Why, then (the timing's note says it)."""
        self._warm: _Warm | None = None
        self._ahead: _Ahead | None = None
        self.phases: list[dict[str, object]] = []
        """Where each run of the latest measure() spent its time (process-level methods: Run.phases)."""
        self.lines_started = ""
        """How the latest lines_rounds() started its runs (the timing's note says it)."""
        self.gate_broken: str | None = None
        """Why runs are no longer started ahead of their turn (a run parked before CUDA did not take its
        go); the timing's note says it."""

    def __enter__(self) -> Timer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the driver warm() started that no timing used (nothing when there is none)."""
        warm, self._warm = self._warm, None
        if warm is not None:
            warm.stage.process.stop()
            warm.go.unlink(missing_ok=True)
        ahead, self._ahead = self._ahead, None
        for run in ahead.runs if ahead is not None else []:
            run.discard()

    @property
    def inprocess(self) -> bool:
        """Whether measure() times both sides in one process (native.py); it still falls back to one process
        per side and round, saying so, when that process cannot run."""
        return (
            self.method == "beaver_time_ms"
            and self.tcfg.method is None
            and self.tcfg.inprocess
            and self.native
            and self.task.timing_driver is not None
        )

    # ------------------------------------------------------------------ samplers

    def _contract(self, work: stages.WorkDir) -> tuple[list[float], StageResult]:
        assert self.task.benchmark_command
        res = stages.run_stage(work, "benchmark", self.task.benchmark_command, self.tcfg.stage_s, self.config)
        return parse_times(res.log), res

    @property
    def builds(self) -> bool:
        """Whether measure() needs something built first (prepare()): the reference of a method that runs
        it in its own work dir. A family's own method times a reference that needs no build, or none."""
        return self.method in ("beaver_time_ms", "cupti", "ncu")

    def prepare(self) -> None:
        """Build what measure() needs, so that it builds nothing while the GPU is held for timing: the
        reference's work dir (cached per reference, harness and toolkit) and, for CUPTI and for a
        testbench's runs parked together, the injection library. Raises SpeedupUnavailable when the reference does not build here, and BeaverError when the
        CUPTI library does not build and there is no ncu to fall back to; otherwise that failure is
        remembered and measure() goes straight to ncu without building again."""
        if self.method == "testbench_lines":
            self._lines_library()
        if not self.builds:
            return
        ref = reference_workdir(self.task, self.config, self.tcfg)
        if self.inprocess:
            try:  # the driver and the reference's side library, once per task beside the reference build
                native.reference_side(self.task, ref, self.config)
            except native.NativeUnavailable as exc:  # remembered beside the build: the process contract
                self.native, self.native_why = False, str(exc)
        if self.method == "cupti" and self._lib is None and self._lib_error is None:
            try:
                self._lib = cupti.build_library(self.tcfg.cache)
            except BeaverError as exc:
                self._lib_error = str(exc)
                if not self._falls_back():
                    raise

    @property
    def prepares(self) -> bool:
        """Whether prepare() builds anything: the reference (``builds``), or the injection library that
        parks a testbench's runs (``testbench_lines`` with TimingConfig.prestart ``all``)."""
        return self.builds or (self.method == "testbench_lines" and self.tcfg.prestart == "all")

    @property
    def warms(self) -> bool:
        """Whether prepare_candidate starts the timing driver ahead of the GPU hold (kernelbench: warm)."""
        return self.method == "torch_events_l2flush_interleaved"

    @property
    def parks(self) -> bool:
        """Whether prepare_candidate starts a testbench's timed runs ahead of the GPU hold, parked before CUDA
        (``testbench_lines`` with TimingConfig.prestart ``all`` and the injection library built: park)."""
        return (
            self.method == "testbench_lines"
            and self.tcfg.prestart == "all"
            and self._lib is not None
            and self.gate_broken is None
        )

    def prepare_candidate(self, cand: stages.WorkDir, park: bool = True) -> None:
        """What the candidate's timing can do before the GPU is held (the batch does this on a build slot, so
        that the hold is spent timing): build its side library for the in-process method, start the
        kernelbench driver up to its go (warm), or, with ``park``, start a testbench's timed runs and park
        them before CUDA (park: the config must then name the GPU the hold will give). Nothing when none
        applies."""
        if self.inprocess:
            self.library = native.build_library(self.task, cand, self.config)
        if self.warms:
            self.warm(cand)
        if park and self.parks:
            self.park(cand)

    def prepare_reference(self, wait: bool = True) -> None:
        """time_reference's counterpart of prepare_candidate: the reference-only kernelbench driver started in
        the reference's work dir up to its go (warm; ``wait=False``: started, not waited for)."""
        if self.warms:
            self.warm(reference_workdir(self.task, self.config, self.tcfg), reference_only=True, wait=wait)

    def warm(self, work: stages.WorkDir, reference_only: bool = False, wait: bool = True) -> bool:
        """Start the kernelbench driver in ``work`` ahead of the GPU hold, up to its go: torch imported and
        the task's problem.py loaded, with no GPU visible (``CUDA_VISIBLE_DEVICES`` empty), nothing run on
        one and the candidate's solution not loaded. Waits at most READY_S for it to be ready, and keeps it
        for the next kernelbench_samples of this work dir and side, which gives it its go. False, with
        nothing kept, when it did not get ready (that timing then starts its own driver). ``wait=False``
        returns once it is started (corpus validate starts the next task's driver while one is timed): the
        go then waits for it to be ready first."""
        self.close()
        if not self.warms:
            return False
        go = work.path / f".beaver-kb-go-{uuid.uuid4().hex[:12]}"
        command = (
            self._kernelbench_command(reference_only)
            + f" --go-file {shlex.quote(go.name)} --go-timeout {self.tcfg.go_s:g}"
        )
        base = dict(self.config.env if self.config.env is not None else os.environ)
        ahead = replace(self.config, env={**base, "CUDA_VISIBLE_DEVICES": ""})
        life = READY_S + self.tcfg.go_s + self.tcfg.stage_s
        try:
            stage = stages.start_stage(work, command, life, ahead, stage="benchmark")
        except OSError:
            return False
        # importing torch, it counts as a build (a batch may stop it for a timing)
        with nullcontext() if self.config.pausable is None else self.config.pausable(stage.process):
            ready = not wait or stage.process.until(DRIVER_READY.encode(), READY_S)
        if not ready:
            stage.process.stop()
            return False
        self._warm = _Warm(work.path, reference_only, stage, go, _as_run(self.config), ready=wait)
        return True

    def _cuda_env(self) -> dict[str, str]:
        """The CUDA_ variables a run started now would have (LATE_ENV: CUDA_VISIBLE_DEVICES, the GPU)."""
        env = stages.stage_env(self.task, self.config)
        return {k: v for k, v in env.items() if LATE_ENV.match(k)}

    def park(self, work: stages.WorkDir) -> bool:
        """Start the testbench's ``rounds`` timed runs in ``work`` ahead of the GPU hold, all at once, and wait
        (at most stage_s) until each is parked at its gate before CUDA: their starts (for a Python harness,
        seconds of imports and extension loads each) then happen before the hold, and the hold lets them go
        one after another (lines_rounds). A run waits at its gate up to go_s longer than it would parked
        inside the hold. They are started with this timer's config as it is now: a hold whose CUDA_
        variables differ (another GPU) ends them and parks its own. False (nothing kept) when they cannot
        start here."""
        self.close()
        if not self.parks:
            return False
        runs: list[Run] = []
        try:
            for i in range(max(1, self.tcfg.rounds)):
                runs.append(
                    self._start_run(
                        work,
                        "candidate",
                        gated=True,
                        kernels=False,
                        behind=i + 1,
                        extra_wait_s=self.tcfg.go_s,
                    )
                )
        except (OSError, BeaverError):
            for run in runs:
                run.discard()
            return False
        began = time.monotonic()
        deadline = began + self.tcfg.stage_s
        with ExitStack() as starting:  # starting, they count as builds (a batch may stop them for a timing)
            if self.config.pausable is not None:
                for run in runs:
                    starting.enter_context(self.config.pausable(run.stage.process))
            for run in runs:
                run.await_gate(deadline)
        self._ahead = _Ahead(work.path, runs, self._cuda_env(), round(time.monotonic() - began, 3))
        return True

    def _parked_ahead(self, work: stages.WorkDir) -> _Ahead | None:
        """The runs park() started for ``work``, when they still wait at their gates and the hold's CUDA_
        variables are theirs; otherwise they are ended and None (the hold parks its own)."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        if (
            ahead.work == work.path
            and ahead.cuda_env == self._cuda_env()
            and all(run.stage.process.alive() for run in ahead.runs)
        ):
            return ahead
        for run in ahead.runs:
            run.discard()
        return None

    def _falls_back(self) -> bool:
        """Whether a failed CUPTI timing is tried again with ncu (CUPTI not forced, ncu installed)."""
        return self.method == "cupti" and self.tcfg.method is None and shutil.which("ncu") is not None

    def _lines_library(self) -> None:
        """With TimingConfig.prestart ``all``, the injection library that parks a testbench's runs, built once
        (cached per cache folder); a failure is remembered, and those runs then start in turn."""
        if self.tcfg.prestart != "all" or self._lib is not None or self._lib_error is not None:
            return
        try:
            self._lib = cupti.build_library(self.tcfg.cache)
        except BeaverError as exc:
            self._lib_error = str(exc)

    def _library(self) -> Path:
        if self._lib is None:
            if self._lib_error is not None:
                raise BeaverError(self._lib_error)
            self._lib = cupti.build_library(self.tcfg.cache)
        return self._lib

    def _start_run(
        self,
        work: stages.WorkDir,
        who: str,
        gated: bool,
        kernels: bool = True,
        behind: int = 1,
        extra_wait_s: float = 0.0,
    ) -> Run:
        """One run of the test command under the injection library, not waited for: with ``gated``, parked
        before CUDA until ``Run.let_go``, which may be ``behind`` whole runs and ``extra_wait_s`` (the wait
        for the GPU of a run started before its hold, park) away; with ``kernels`` False, recording no
        kernels (the gate and the phase marks only)."""
        lib = self._library()
        folder = Path(tempfile.mkdtemp(prefix="beaver-cupti-"))
        out = folder / "kernels.txt"
        out.touch()  # made before the start, so that the sandbox keeps it (it keeps paths the environment names)
        env = {**stages.stage_env(self.task, self.config), **cupti.environment(lib, out)}
        if gated:
            env.update(cupti.gate_environment(folder, (behind + 1) * self.tcfg.stage_s + extra_wait_s))
        if not kernels:
            env[cupti.ACTIVITY_ENV] = "0"
        cfg = stages.StageConfig(**{**self.config.__dict__, "env": env})
        started = time.monotonic()
        # a gated run's life covers its wait; once let go, it has stage_s of its own (_end_run)
        life = self.tcfg.stage_s * (behind + 2 if gated else 1) + (extra_wait_s if gated else 0.0)
        try:
            stage = stages.start_stage(
                work, timing_command(self.task.test_command), life, cfg, stage="benchmark"
            )
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return Run(who, stage, folder, gated, started)

    def _end_run(self, run: Run, on_exit: Callable[[str], None] | None = None) -> tuple[str, StageResult]:
        """Wait for a run that has its go (stage_s from then at most), record it and its phases; (the
        injection file's text, the run's record). ``on_exit`` is called with the file's text as soon as the
        run has written its exit mark, before its process has ended. Raises GateBroken as Run.await_go."""
        try:
            if run.gated:
                run.await_go(self.tcfg.stage_s)
            if on_exit is not None:
                at_exit = run.await_exit()
                if at_exit is not None:
                    on_exit(at_exit)
            with nullcontext() if self.config.pausable is None else self.config.pausable(run.stage.process):
                left = (
                    None if not run.gated else self.tcfg.stage_s - (time.monotonic() - (run.let_go_at or 0.0))
                )
                outcome = run.stage.finish(None if left is None else max(0.0, left))
            res = stages.stage_result("benchmark", run.stage.command, outcome)
            text = run.out.read_text(errors="replace") if run.out.exists() else ""
        finally:
            run.discard()
        ended = time.monotonic()
        if run.gated:  # the run's own time: from its go (the process before it had ended) to its end
            res = res.model_copy(update={"duration_s": round(ended - (run.let_go_at or run.started), 4)})
        self.phases.append(run.phases(text, ended))
        return text, res

    def _kernel_ms(self, text: str) -> float | None:
        """The sum of the kernels an injection file records (a Python harness's framework kernels left out),
        or None when it records none."""
        recs, _problems = cupti.parse(text)
        python = self.task.language == "python" or "python" in self.task.test_command
        kept = [r for r in recs if not (python and FRAMEWORK_KERNEL.search(r.name))]
        return sum(r.ms for r in kept) if kept else None

    def _cupti_samples(self, text: str, res: StageResult) -> list[float]:
        ms = self._kernel_ms(text)
        return [] if res.rc != 0 or ms is None else [ms]

    def _cupti(self, work: stages.WorkDir) -> tuple[list[float], StageResult]:
        text, res = self._end_run(self._start_run(work, "run", gated=False))
        return self._cupti_samples(text, res), res

    def _ncu(self, work: stages.WorkDir) -> tuple[list[float], StageResult]:
        nvtx = (
            f"--nvtx --nvtx-include {shlex.quote(self.tcfg.nvtx_range + '/')} "
            if self.tcfg.nvtx_range
            else ""
        )
        cmd = (
            f"ncu --metrics gpu__time_duration.sum --clock-control none --csv --print-units base {nvtx}"
            f"--target-processes all /bin/bash -c {shlex.quote(adapt_command(timing_command(self.task.test_command), self.config.sm))}"
        )
        res = stages.run_stage(work, "benchmark", cmd, self.tcfg.stage_s, self.config, adapt=False)
        rows = parse_ncu_csv(res.log)
        python = self.task.language == "python" or "python" in self.task.test_command
        kept = [ms for name, ms in rows if not (python and FRAMEWORK_KERNEL.search(name))]
        return ([sum(kept)] if kept else []), res

    # ------------------------------------------------------------------ measurement

    def _sampler(self) -> Sampler:
        return {"beaver_time_ms": self._contract, "cupti": self._cupti, "ncu": self._ncu}[self.method]

    def _interleaved(
        self, ref: stages.WorkDir, cand: stages.WorkDir, stop_below: float | None = None
    ) -> tuple[list[float], list[float]]:
        if self.gated:
            return self._gated_or_in_turn(
                lambda: self._interleaved_gated(ref, cand), lambda: self._interleaved(ref, cand, stop_below)
            )
        sample = self._sampler()
        rounds = self.tcfg.rounds if self.method == "beaver_time_ms" else self.tcfg.process_runs
        r_all: list[float] = []
        c_all: list[float] = []
        self.stopped_early = None
        for done in range(rounds):
            if done == 1 and stop_below is not None and self.method == "beaver_time_ms" and r_all and c_all:
                (rm, rcv), (cm, ccv) = stats(r_all), stats(c_all)
                if cm > 0 and rm / cm < stop_below and max(rcv, ccv) <= CV_LIMIT:
                    self.stopped_early = (
                        f"stopped after 1 of {rounds} rounds: {rm / cm:.3g}x, below {stop_below:.3g}x "
                        "(half the gate), with both CVs under 3%"
                    )
                    break
            for work, acc, who in ((ref, r_all, "reference"), (cand, c_all, "candidate")):
                got, res = sample(work)
                if not got:
                    if (
                        who == "candidate"
                        and self.method == "beaver_time_ms"
                        and res.rc
                        and not res.timed_out
                    ):
                        raise CandidateTimingFailed(res, anticheat.failure_evidence(res.log, res.rc))
                    if who == "candidate":
                        raise self._candidate_failure(cand, res)
                    raise self._no_samples(who, res)
                acc.extend(got)
                self.runs.append((who, res))
            if self.method != "beaver_time_ms" and adaptive.enough(
                r_all, c_all, self.tcfg.min_process_runs, self.tcfg.target_halfwidth
            ):
                break
        return r_all, c_all

    @property
    def gated(self) -> bool:
        """Whether CUPTI runs are started ahead of their turn (TimingConfig.prestart; not once a run did not
        see its go here, gate_broken)."""
        return self.method == "cupti" and self.tcfg.prestart in ("cupti", "all") and self.gate_broken is None

    def _no_samples(self, who: str, res: StageResult) -> BeaverError:
        """The error of a timing run of ``who`` that gave no samples (SpeedupUnavailable for the reference)."""
        tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
        error = SpeedupUnavailable if who == "reference" else BeaverError
        return error(f"{self.method} timing of the {who} produced no samples (rc {res.rc}): {tail[0][:200]}")

    def _candidate_failure(
        self, work: stages.WorkDir, res: StageResult, error: BeaverError | None = None
    ) -> BeaverError:
        """The error of a candidate's timing run that gave no samples, where that run is the task's own test
        command (CUPTI, ncu, a testbench's speed lines) or calls the candidate's code as the test command
        does (kernelbench's driver), and the candidate passed that test command as its correctness run.
        When the run exited non-zero (not at its time limit), the test command is run once more as the
        correctness run ran it (no injection library, no profiler): failing again, the failure is the
        candidate's (CandidateTimingFailed with that run's record: a candidate that passes its check only at
        times, as one with a race does); passing, it is ``error`` (by default the machine's or the timing
        tool's, BeaverError; a testbench's or the kernelbench driver's, SpeedupUnavailable), as for a run
        that gave no samples otherwise. A run that ran out of GPU memory is not run again: the timing holds
        more than the check did (both sides, and runs stopped for it keep theirs), so that is ``error``."""
        error = error or self._no_samples("candidate", res)
        if self.method not in PLAIN_RERUN or not res.rc or res.timed_out:
            return error
        if out_of_memory(f"{error}\n{res.log}"):  # the timing's memory, not the check's: beside runs stopped
            return error  # for it, a batch times it again once they end (scheduled.py)
        plain = stages.test(work, self.config)
        if plain.rc != 0 or plain.timed_out:
            why = "at its time limit" if plain.timed_out else anticheat.failure_evidence(plain.log, plain.rc)
            return CandidateTimingFailed(
                plain,
                f"{why} (its test command run again as its correctness run ran it, after its {self.method} "
                f"timing run exited with status {res.rc})",
            )
        return type(error)(f"{error}; its test command, run again as its correctness run ran it, passed")

    def _gated_or_in_turn(self, gated: Callable[[], _T], in_turn: Callable[[], _T]) -> _T:
        """``gated()``; when a run there did not see its go (GateBroken), its runs are dropped, gate_broken
        says why, and ``in_turn()`` times again with each run started in its turn."""
        kept = len(self.runs)
        try:
            return gated()
        except GateBroken as exc:
            self.gate_broken = str(exc)
            del self.runs[kept:]
        return in_turn()

    def _cupti_chain(
        self,
        order: tuple[tuple[stages.WorkDir, str], ...],
        total: int,
        enough: Callable[[str, dict[str, list[float]]], bool],
    ) -> dict[str, list[float]]:
        """At most ``total`` CUPTI runs of the sides in ``order``, in turn, started ahead (_chain), until
        ``enough(side just run, samples so far)``; the samples of each side, by name. With
        TimingConfig.go_at_exit a run is let go at the exit mark of the one before, unless the kernels that
        one recorded end the sampling."""
        got: dict[str, list[float]] = {who: [] for _, who in order}

        def take(who: str, text: str, res: StageResult) -> bool:
            samples = self._cupti_samples(text, res)
            if not samples:
                error = self._no_samples(who, res)
                raise _CandidateNoSamples(error, res) if who == "candidate" else error
            got[who].extend(samples)
            self.runs.append((who, res))
            return enough(who, got)

        def would_end(who: str, text: str) -> bool:
            ms = self._kernel_ms(text)
            return ms is not None and enough(who, {**got, who: [*got[who], ms]})

        self._chain(order, total, take, would_end=would_end if self.tcfg.go_at_exit else None)
        return got

    def _chain(
        self,
        order: tuple[tuple[stages.WorkDir, str], ...],
        total: int,
        take: Callable[[str, str, StageResult], bool],
        kernels: bool = True,
        would_end: Callable[[str, str], bool] | None = None,
    ) -> None:
        """At most ``total`` runs of the sides in ``order``, in turn, each started while the run before it
        runs and let go once that run has ended, so that one timed process is past its CUDA start at a time.
        ``take(side, injection file's text, record)`` keeps a run and says whether no more are needed; the
        run started ahead of one not needed is ended before its go. With ``would_end``, the run ahead is let
        go at the exit mark of the one before unless ``would_end(side, text at that mark)``."""
        current: Run | None = self._start_run(*order[0], gated=True, kernels=kernels)
        ahead: Run | None = None
        done = 0
        try:
            while current is not None:
                current.let_go()
                if done + 1 < total:
                    ahead = self._start_run(*order[(done + 1) % len(order)], gated=True, kernels=kernels)
                text, res = self._end_run(current, self._release_at_exit(current, ahead, would_end))
                done += 1
                if take(current.who, text, res):
                    break
                current, ahead = ahead, None
        finally:
            for run in (current, ahead):
                if run is not None:
                    run.discard()

    def _parked_together(
        self,
        order: tuple[tuple[stages.WorkDir, str], ...],
        total: int,
        take: Callable[[str, str, StageResult], bool],
        kernels: bool = True,
    ) -> None:
        """``total`` runs of the sides in ``order``, all started at once and parked before CUDA; once every
        one is at its gate (or has ended, or stage_s has passed), let go one at a time, each once the one
        before has ended. For timings that take every run (the testbench's own speed lines): the starts,
        seconds of a Python harness's imports and extension loads each, overlap one another and no timed
        run. ``take`` as in _chain."""
        runs: list[Run] = []
        try:
            for i in range(total):
                runs.append(
                    self._start_run(*order[i % len(order)], gated=True, kernels=kernels, behind=i + 1)
                )
            deadline = time.monotonic() + self.tcfg.stage_s
            for run in runs:
                run.await_gate(deadline)
        except BaseException:
            for run in runs:
                run.discard()
            raise
        self._one_after_another(runs, take)

    def _one_after_another(self, runs: list[Run], take: Callable[[str, str, StageResult], bool]) -> None:
        """Let parked ``runs`` go one at a time, each once the one before has ended, until ``take`` says no
        more are needed; every run is ended and its folder removed after."""
        try:
            for run in runs:
                run.let_go()
                text, res = self._end_run(run)
                if take(run.who, text, res):
                    break
        finally:
            for run in runs:
                run.discard()

    @staticmethod
    def _release_at_exit(
        current: Run, ahead: Run | None, would_end: Callable[[str, str], bool] | None
    ) -> Callable[[str], None] | None:
        """What lets ``ahead`` go at ``current``'s exit mark (None: it goes once ``current`` has ended)."""
        if would_end is None or ahead is None:
            return None

        def release(text: str) -> None:
            if not would_end(current.who, text):
                ahead.let_go()

        return release

    def _interleaved_gated(
        self, ref: stages.WorkDir, cand: stages.WorkDir
    ) -> tuple[list[float], list[float]]:
        """CUPTI runs in (reference, candidate) rounds as _interleaved, started ahead of their turn
        (_cupti_chain), until adaptive sampling has enough after a candidate's run."""
        target, least = self.tcfg.target_halfwidth, self.tcfg.min_process_runs
        self.stopped_early = None

        def enough(who: str, got: dict[str, list[float]]) -> bool:
            return who == "candidate" and adaptive.enough(got["reference"], got["candidate"], least, target)

        try:
            got = self._cupti_chain(
                ((ref, "reference"), (cand, "candidate")), 2 * self.tcfg.process_runs, enough
            )
        except _CandidateNoSamples as exc:  # the runs started ahead have ended: whose failure was it?
            raise self._candidate_failure(cand, exc.result, exc.error) from None
        return got["reference"], got["candidate"]

    def measure(self, cand: stages.WorkDir, gate: float | None = None) -> TimingResult:
        """Interleaved timing; re-measured once when either CV is above 3%. With a ``gate``, a candidate whose
        first (reference, candidate) round is below half the gate, both CVs under 3%, is not timed further:
        the remaining rounds cannot bring it near the gate, and a degenerate candidate (often hundreds of
        times slower) would otherwise hold the GPU for every round. The result's note says so. The result
        records how long the measurement took (``wall_s``)."""
        start = time.monotonic()
        self.phases = []
        result = self._measure_any(cand, gate)
        return result.model_copy(update={"wall_s": round(time.monotonic() - start, 3)})

    def _measure_any(self, cand: stages.WorkDir, gate: float | None) -> TimingResult:
        if self.method == "none":
            raise SpeedupUnavailable(families.NO_REFERENCE)
        if self.method == "torch_events_l2flush_interleaved":
            return self._measure_kernelbench(cand)
        if self.method == "testbench_lines":
            return self._measure_lines(cand)
        fallback: str | None = None
        if self.native_why is not None and self.method == "beaver_time_ms":
            fallback = f"in-process timing unavailable ({self.native_why}): one process per side and round"
        ref = reference_workdir(self.task, self.config, self.tcfg)
        if self.inprocess:
            try:
                return native.measure(self, RULES, ref, cand, gate, self.library)
            except native.NativeUnavailable as exc:
                fallback = f"in-process timing unavailable ({exc}): one process per side and round"
        self.runs = []
        stop_below = gate / 2 if gate else None
        try:
            r, c = self._interleaved(ref, cand, stop_below)
        except CandidateTimingFailed:
            raise  # the candidate's own failure: the profiler would find it again
        except BeaverError:
            if not self._falls_back():
                raise
            self.method = "ncu"
            r, c = self._interleaved(ref, cand)
        note = self.stopped_early
        if self.gate_broken is not None:
            fallback = "; ".join(x for x in (fallback, f"runs started in turn: {self.gate_broken}") if x)
        (rm, rcv), (cm, ccv) = stats(r), stats(c)
        process = self.method != "beaver_time_ms"
        if process:
            note = adaptive.note(r, c, self.tcfg.target_halfwidth)
        first = len(self.runs)
        if max(rcv, ccv) > CV_LIMIT:
            r, c = self._interleaved(ref, cand)
            (rm, rcv), (cm, ccv) = stats(r), stats(c)
            note = "re-measured once: CV above 3%"
            if process:
                note += "; " + adaptive.note(r, c, self.tcfg.target_halfwidth)
        else:
            first = 0
        speedup = rm / cm if cm > 0 else math.inf
        if not (math.isfinite(speedup) and speedup > 0):
            raise BeaverError(
                f"{self.method} timing gave no usable speedup (reference {rm:g} ms, candidate {cm:g} ms)"
            )
        pairs: dict[str, list[tuple[float, float]]] = {"reference": [], "candidate": []}
        for who, res in self.runs[first:]:
            pairs[who].extend(anticheat.timed_pairs(res.log) if self.method == "beaver_time_ms" else [])
        flags = self.audit(pairs["candidate"], pairs["reference"])
        return TimingResult(
            method=self.method,
            candidate_ms=cm,
            reference_ms=rm,
            candidate_cv=ccv,
            reference_cv=rcv,
            speedup=speedup,
            candidate_samples=c,
            reference_samples=r,
            unstable=max(rcv, ccv) > CV_LIMIT,
            implausible=speedup > IMPLAUSIBLE,
            note="; ".join(x for x in (fallback, note) if x) or None,
            candidate_host_samples=[h for _, h in pairs["candidate"]],
            reference_host_samples=[h for _, h in pairs["reference"]],
            flags=flags,
            runs=len(c) if process else None,
        )

    # ------------------------------------------------------------------ family methods

    def _kernelbench_command(self, reference_only: bool) -> str:
        """The driver's command: run in the environment the task's own eval compiles the candidate in
        (families.kernelbench_compile_env), so that it loads the build stage's pre-build of the candidate's
        extension instead of compiling it again with the GPU held."""
        trials = max(2 * self.tcfg.process_runs, 10)
        test = adapt_command(self.task.test_command, self.config.sm)
        env = " ".join(
            f"{k}={shlex.quote(v)}" for k, v in sorted(families.kernelbench_compile_env(test).items())
        )
        return (
            f"{env} python {shlex.quote(str(KERNELBENCH_DRIVER))} --problem problem.py "
            f"--solution {shlex.quote(self.task.solution_file)} --trials {trials}"
            + (" --reference-only" if reference_only else "")
        )

    def _go(self, work: stages.WorkDir, reference_only: bool) -> StageResult | None:
        """The run of the driver warm() started for this work dir and side, given its go with the environment
        of ``self.config`` (the GPU now held); None, the driver ended, when there is none, it is gone, or it
        could not take that environment or never took its go. Its record is that of the driver run started
        now: the stage time limit counts from the go, and so does its duration; the driver's ready and go
        lines are left out of its log."""
        warm, self._warm = self._warm, None
        if warm is None:
            return None
        try:
            now = (work.path, reference_only, _as_run(self.config))
            if (warm.work, warm.reference_only, warm.config) != now or not warm.stage.process.alive():
                return None
            if not warm.ready and not warm.stage.process.until(DRIVER_READY.encode(), READY_S):
                return None  # started without waiting (warm(wait=False)) and not ready in time
            want = stages.stage_env(self.task, self.config)
            env = {k: v for k, v in want.items() if warm.stage.env.get(k) != v}
            unset = sorted(k for k in warm.stage.env if k not in want)
            if not all(LATE_ENV.match(k) for k in (*env, *unset)):
                return None
            part = warm.go.with_name(warm.go.name + ".part")
            try:
                part.write_text(json.dumps({"env": env, "unset": unset}), encoding="utf-8")
                part.replace(warm.go)  # whole, at once: the driver never reads half of it
            except OSError:
                part.unlink(missing_ok=True)
                return None
            went = time.monotonic()
            out = warm.stage.finish(self.tcfg.stage_s)
        finally:
            warm.stage.process.stop()  # nothing once finished
            warm.go.unlink(missing_ok=True)
        lines = out.log.splitlines(keepends=True)
        if not any(ln.strip() == DRIVER_GO for ln in lines):
            return None  # it gave up waiting (its go timeout) before the go came
        kept = [ln for ln in lines if ln.strip() not in (DRIVER_READY, DRIVER_GO)]
        dropped = len("".join(lines).encode()) - len("".join(kept).encode())
        res = stages.stage_result("benchmark", warm.stage.command, out)
        return res.model_copy(
            update={
                "log": "".join(kept),
                "log_bytes": max(0, res.log_bytes - dropped),
                "duration_s": round(max(0.0, out.duration_s - (went - warm.stage.process.began)), 4),
            }
        )

    def kernelbench_samples(self, work: stages.WorkDir, reference_only: bool = False) -> dict[str, object]:
        """Run the in-process driver in ``work`` (eager Model against its ModelNew); its result object. A
        driver warm() started for this work dir and side is given its go instead (_go); without one, or when
        it cannot be used, the driver is started here."""
        res = self._go(work, reference_only)
        if res is None:
            command = self._kernelbench_command(reference_only)
            res = stages.run_stage(work, "benchmark", command, self.tcfg.stage_s, self.config)
        self.runs.append(("candidate", res))
        doc: dict[str, object] | None = None
        for line in res.log.splitlines():
            if line.startswith(DRIVER_TAG):
                try:
                    doc = json.loads(line[len(DRIVER_TAG) :])
                except ValueError:
                    doc = None
        if doc is None:
            tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
            raise SpeedupUnavailable(
                f"the kernelbench timing driver printed no result (rc {res.rc}): {tail[0][:200]}"
            )
        if "error" in doc:
            error = SpeedupUnavailable(
                f"kernelbench timing failed on the {doc.get('side')} side: {doc['error']}"
            )
            raise _CandidateNoSamples(error, res) if doc.get("side") == "candidate" else error
        return doc

    def _kernelbench_pair(self, cand: stages.WorkDir) -> tuple[dict[str, object], list[float], list[float]]:
        try:
            doc = self.kernelbench_samples(cand)
        except _CandidateNoSamples as exc:  # the driver has ended: the candidate's failure, or not?
            raise self._candidate_failure(cand, exc.result, exc.error) from None
        r = [float(x) for x in doc["reference_ms"]]  # type: ignore[attr-defined]
        c = [float(x) for x in doc["candidate_ms"]]  # type: ignore[attr-defined]
        if not r or not c:
            raise SpeedupUnavailable("the kernelbench timing driver returned no samples")
        return doc, r, c

    def _measure_kernelbench(self, cand: stages.WorkDir) -> TimingResult:
        self.runs = []
        doc, r, c = self._kernelbench_pair(cand)
        (rm, rcv), (cm, ccv) = stats(r), stats(c)
        again = ""
        if max(rcv, ccv) > CV_LIMIT:  # the timing rules: re-measured once, that measurement kept
            doc, r, c = self._kernelbench_pair(cand)
            (rm, rcv), (cm, ccv) = stats(r), stats(c)
            again = "re-measured once: CV above 3%; "
        note = again + (
            f"one process, interleaved, {doc.get('warmup')} warm-up calls, L2 flushed "
            f"({int(doc.get('flush_bytes') or 0) >> 20} MiB) before each call, CUDA events" + phases_note(doc)  # type: ignore[call-overload]
        )
        speedup = rm / cm if cm > 0 else float("inf")
        return TimingResult(
            method=self.method, candidate_ms=cm, reference_ms=rm, candidate_cv=ccv, reference_cv=rcv,
            speedup=speedup, candidate_samples=c, reference_samples=r, unstable=max(rcv, ccv) > CV_LIMIT,
            implausible=speedup > IMPLAUSIBLE, note=note,
        )  # fmt: skip

    def lines_rounds(self, work: stages.WorkDir) -> list[families.SpeedLines]:
        """The testbench's speed lines of ``rounds`` runs of the test command, alone on the GPU; with
        TimingConfig.prestart ``all`` (and the injection library built, prepare()), all of them started at
        once and parked before CUDA, recording no kernels, then let go one after another
        (_parked_together)."""
        rounds = max(1, self.tcfg.rounds)
        out: list[families.SpeedLines] = []

        def take(who: str, _text: str, res: StageResult) -> bool:
            self.runs.append((who, res))
            lines = families.parse_speed_lines(res.log)
            if res.rc != 0 or lines.speedup is None:
                tail = [ln for ln in res.log.splitlines() if ln.strip()][-1:] or ["no output"]
                error = SpeedupUnavailable(
                    f"the testbench printed no usable Speedup line (rc {res.rc}): {tail[0][:200]}"
                )
                raise _CandidateNoSamples(error, res) if res.rc else error  # its check failed: whose doing?
            out.append(lines)
            return False

        def in_turn() -> list[families.SpeedLines]:
            out.clear()
            self.lines_started = f"its {rounds} runs started one after another"
            command = timing_command(self.task.test_command)
            for _ in range(rounds):
                take(
                    "candidate",
                    "",
                    stages.run_stage(work, "benchmark", command, self.tcfg.stage_s, self.config),
                )
            return out

        def gated() -> list[families.SpeedLines]:
            ahead = self._parked_ahead(work)
            if ahead is not None:  # started and parked before the hold (park)
                self.lines_started = (
                    f"its {len(ahead.runs)} runs started before the GPU was held and waited before CUDA "
                    f"({ahead.parking_s:.1f} s to start, not in this stage's wall); the hold let them go one "
                    "after another"
                )
                self._one_after_another(ahead.runs, take)
            else:
                self.lines_started = (
                    f"its {rounds} runs started at once with the GPU held and waited before CUDA; let go one "
                    "after another"
                )
                self._parked_together(((work, "candidate"),), rounds, take, kernels=False)
            return out

        self._lines_library()  # when prepare() was not called
        if self.parks:
            return self._gated_or_in_turn(gated, in_turn)
        return in_turn()

    def _measure_lines(self, cand: stages.WorkDir) -> TimingResult:
        self.runs = []
        try:
            rounds = self.lines_rounds(cand)
        except _CandidateNoSamples as exc:  # its runs have ended: the candidate's failure, or not?
            raise self._candidate_failure(cand, exc.result, exc.error) from None
        sp = [x.speedup for x in rounds if x.speedup is not None]
        cs = [x.candidate for x in rounds if x.candidate is not None]
        rs = [x.reference for x in rounds if x.reference is not None]
        speedup = statistics.median(sp)
        cm, ccv = stats(cs) if cs else (0.0, 0.0)
        rm, rcv = stats(rs) if rs else (cm * speedup, 0.0)
        return TimingResult(
            method=self.method, candidate_ms=cm, reference_ms=rm, candidate_cv=ccv, reference_cv=rcv,
            speedup=speedup, candidate_samples=cs, reference_samples=rs or [rm], unstable=max(rcv, ccv) > CV_LIMIT,
            implausible=speedup > IMPLAUSIBLE,
            note=f"the testbench's own speed lines, median of {len(rounds)} runs of the geometric mean over its sizes; "
            + self.lines_started
            + (f"; runs started in turn: {self.gate_broken}" if self.gate_broken else ""),
        )  # fmt: skip

    def audit(self, cand: list[tuple[float, float]], ref: list[tuple[float, float]]) -> list[str]:
        """Anti-cheat flags of the benchmark runs: a candidate run that failed after its timed launches
        (``cached_result``), output left poisoned in a timed launch, work hidden from the events."""
        found: list[str] = []
        reference_logs = "\n".join(res.log for who, res in self.runs if who == "reference")
        for who, res in self.runs:
            if who != "candidate":
                continue
            hit = anticheat.cached_result_flag(res.rc, res.log, res.timed_out)
            found += [hit] if hit and self.method == "beaver_time_ms" else []
            found += anticheat.poison_flags(res.log, " in a timing run", reference_logs)
        side = anticheat.side_stream_of_pairs(cand, ref)
        found += [side] if side else []
        return anticheat.first_of_each_kind(found)


#: What the in-process path (native.py) shares with this module's process contract.
RULES = native.Rules(
    parse_times=parse_times,
    stats=stats,
    cv_limit=CV_LIMIT,
    implausible=IMPLAUSIBLE,
    candidate_failed=CandidateTimingFailed,
)


@dataclass(frozen=True)
class ReferenceTiming:
    """The reference alone, for baselines (corpus validate)."""

    method: str
    median_ms: float
    cv: float
    samples: list[float]
    unstable: bool
    note: str | None = None


def time_reference(timer: Timer) -> ReferenceTiming:
    """Time the task's reference alone with the timer's method; re-measured once when CV is above 3%."""
    if timer.method == "none":
        raise SpeedupUnavailable(families.NO_REFERENCE)
    if timer.method == "testbench_lines":
        raise SpeedupUnavailable("the reference is timed inside every candidate's testbench run")
    ref = reference_workdir(timer.task, timer.config, timer.tcfg)
    if timer.inprocess:
        try:
            got, why = native.time_reference(timer, RULES, ref)
            med, cv = stats(got)
            return ReferenceTiming(native.METHOD, med, cv, got, cv > CV_LIMIT, why)
        except native.NativeUnavailable:
            pass  # timed through the process contract below
    if timer.method == "torch_events_l2flush_interleaved":

        def alone() -> tuple[dict[str, object], list[float]]:
            doc = timer.kernelbench_samples(ref, reference_only=True)
            got = [float(x) for x in doc["reference_ms"]]  # type: ignore[attr-defined]
            if not got:
                raise SpeedupUnavailable("the kernelbench timing driver returned no reference samples")
            return doc, got

        doc, got = alone()
        med, cv = stats(got)
        again = ""
        if cv > CV_LIMIT:  # the timing rules: re-measured once, that measurement kept
            doc, got = alone()
            med, cv = stats(got)
            again = "re-measured once: CV above 3%; "
        said = again + "eager Model alone, L2 flushed per call" + phases_note(doc)
        return ReferenceTiming(timer.method, med, cv, got, cv > CV_LIMIT, said)
    sample = timer._sampler()
    rounds = timer.tcfg.rounds if timer.method == "beaver_time_ms" else timer.tcfg.process_runs

    process = timer.method != "beaver_time_ms"
    target = timer.tcfg.target_halfwidth

    def ahead() -> list[float]:  # runs started ahead of their turn, as in a timing stage
        def enough(_who: str, got: dict[str, list[float]]) -> bool:
            return adaptive.enough_alone(got["reference"], timer.tcfg.min_process_runs, target)

        return timer._cupti_chain(((ref, "reference"),), rounds, enough)["reference"]

    def collect() -> list[float]:
        return timer._gated_or_in_turn(ahead, in_turn) if timer.gated else in_turn()

    def in_turn() -> list[float]:
        acc: list[float] = []
        for _ in range(rounds):
            got, res = sample(ref)
            if not got:
                raise timer._no_samples("reference", res)
            acc.extend(got)
            if process and adaptive.enough_alone(acc, timer.tcfg.min_process_runs, target):
                break
        return acc

    samples = collect()
    med, cv = stats(samples)
    note = adaptive.note_alone(samples, target) if process else None
    if cv > CV_LIMIT:
        samples = collect()
        med, cv = stats(samples)
        note = "re-measured once: CV above 3%" + (
            f"; {adaptive.note_alone(samples, target)}" if process else ""
        )
    return ReferenceTiming(timer.method, med, cv, samples, cv > CV_LIMIT, note)
