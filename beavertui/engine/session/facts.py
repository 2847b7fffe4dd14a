"""What a stage measured, as typed facts inside the session's events (events.py): a command's result, a
sanitizer's report, an anti-cheat finding, an attempt's timing and a kernel's profile. Plain data: no
behaviour, no I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from beavertui.engine.session.version import FORMAT_VERSION


class Frozen(BaseModel):
    # A number in a session is finite: NaN and infinities are neither written nor read as numbers.
    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False)


class StageResult(Frozen):
    """One shell command of an attempt (build, test, benchmark or sanitizer)."""

    stage: Literal["build", "run", "sanitize", "benchmark"]
    """Which stage ran."""
    command: str | None
    """The shell command as run (after adaptation); None when the source did not record it (an imported run)."""
    rc: int | None
    """Exit status; None when killed by the time limit or a signal, or when not recorded (see ``unrecorded``)."""
    signal: int | None = None
    """Signal number that ended the process, if any."""
    timed_out: bool = False
    """The runner's own time limit fired."""
    duration_s: float | None = 0.0
    """Wall time of the stage in seconds; None when the source did not record it (an imported run)."""
    log: str = ""
    """stdout+stderr, interleaved; head and tail only when larger than the runner's bound."""
    log_bytes: int = 0
    """Total bytes the command wrote (log may hold fewer)."""
    cached: bool = False
    """The build was served from the compile cache."""
    stopped_by: str | None = None
    """Limits that stopped or refused the command, in words (CPU time, file size, processes, wall clock)."""
    sandbox: str = ""
    """Isolation that applied to the command, and what this machine could not provide and why."""
    ok: bool | None = None
    """Whether the stage succeeded, where the source recorded only that and no exit status (an imported
    run: the harness's ``BUILD_OK``, its test verdict); None where ``rc`` tells it."""
    rerun_alone: str | None = None
    """Set on a batch's correctness run that was made a second time holding its GPU alone, and says why: the
    first run, while other runs shared the GPU, ran out of GPU memory (their memory may have been the cause).
    The result here, and the verdict, are the second run's."""
    paused_s: float | None = None
    """Seconds the command was stopped (SIGSTOP) while a batch's timing stage held its GPU alone (a run), or
    measured (a build, --builds-in-timing), counted neither in ``duration_s`` nor in its time limit; None
    when it never was."""
    limit_s: float | None = None
    """The wall-clock limit the command ran under, seconds (a correctness run's: engine/corpus/run_limit.py);
    None in files written before it was recorded."""
    limit_from: str | None = None
    """Where a correctness run's limit came from, in words (the reference's run time on this GPU times a
    factor, or the task's own limit and why)."""
    reused: str | None = None
    """Set when the stage was not run for this attempt: its candidate is the broken start itself, and this is
    the result of the check of the broken start made before the first turn (the same toolchain, options and
    machine); says when that check was made."""
    harness_proof: str | None = None
    """A correctness run's proof that the task's own harness ran to its end (engine/judge/harness_proof.py):
    ``ran``, ``not observed`` (no harness executable of the work dir ran), ``skipped: ...`` (a harness
    process ended before its ``main`` returned: the run does not pass); None where no proof was asked."""
    unrecorded: list[str] = Field(default_factory=list)
    """Fields the source of this result did not record (an imported run: ``rc``, ``duration_s``,
    ``command``, ...): their values here are null or empty, never measured."""


class SanitizerRecord(Frozen):
    """One compute-sanitizer finding."""

    tool: str
    """memcheck, racecheck, synccheck or initcheck."""
    kind: str
    """e.g. ``Invalid __global__ read``, ``Race reported``, ``Uninitialized __global__ memory read``."""
    size: int | None = None
    """Access size in bytes."""
    kernel: str | None = None
    """Kernel name."""
    block: str | None = None
    """Block index, e.g. ``(0,0,0)``."""
    thread: str | None = None
    """Thread index."""
    address: str | None = None
    """Faulting address."""
    detail: str | None = None
    """Extra explanation (e.g. ``Address ... is out of bounds``)."""
    host_frame: str | None = None
    """First host backtrace frame (the launch site)."""
    text: str = ""
    """The record's raw lines."""


class Flag(Frozen):
    """One anti-cheat or audit finding (judge/anticheat.py): what it is and its evidence."""

    name: str
    """``side_stream``, ``cached_result``, ``timing_run_failed``, ``implausible_speedup``, ...."""
    detail: str = ""
    """Its evidence, in words (may be empty)."""

    def __str__(self) -> str:
        return f"{self.name}: {self.detail}" if self.detail else self.name


def flags_of(value: object) -> object:
    """A version-1 flag, one ``name: detail`` string, as a Flag; anything else as it is."""
    if not isinstance(value, list):
        return value
    out: list[object] = []
    for item in value:
        if isinstance(item, str):
            name, _, detail = item.partition(":")
            out.append({"name": name.strip(), "detail": detail.strip()})
        else:
            out.append(item)
    return out


class TimingResult(Frozen):
    """Interleaved reference/candidate timing of one attempt (docs/metrics.md (speedup))."""

    method: str
    """``native_inprocess`` (reference and candidate in one timing process), ``beaver_time_ms`` (native contract,
    one process per side and round), ``cupti``, ``ncu``, ``torch_events_l2flush_interleaved`` (kernelbench's driver)
    or ``testbench_lines`` (a testbench's own speed lines)."""
    candidate_ms: float
    """Median candidate time, milliseconds."""
    reference_ms: float
    """Median reference time, milliseconds."""
    candidate_cv: float
    """Coefficient of variation of candidate samples (fraction)."""
    reference_cv: float
    """Coefficient of variation of reference samples (fraction)."""
    speedup: float
    """reference_ms / candidate_ms."""
    candidate_samples: list[float] = Field(default_factory=list)
    """Every raw candidate sample, milliseconds."""
    reference_samples: list[float] = Field(default_factory=list)
    """Every raw reference sample, milliseconds."""
    unstable: bool = False
    """CV above 3% after one re-measurement."""
    implausible: bool = False
    """Speedup above 10x or faster than the hardware floor: to audit."""
    note: str | None = None
    """Anything the reader should know (e.g. the baseline came from the cache)."""
    profile: dict[str, str] = Field(default_factory=dict)
    """Unused since profiles became their own event (``profile``, feedback level L4); kept so older
    session files read."""
    candidate_host_samples: list[float] = Field(default_factory=list)
    """Native contract: every candidate ``BEAVER_HOST_MS`` (host clock from before the start event to a full
    device synchronisation, milliseconds), one per timed run, in the order of candidate_samples."""
    reference_host_samples: list[float] = Field(default_factory=list)
    """The same for the reference."""
    flags: list[Flag] = Field(default_factory=list)
    """Anti-cheat findings of the timing runs (anticheat.py): ``side_stream``, ``cached_result``, ...."""
    wall_s: float | None = Field(default=None, ge=0, le=86400)
    """Seconds the whole timing stage took (every run of both sides, re-measurement included); None in
    sessions written before it was recorded."""
    runs: int | None = None
    """Process-level methods (``cupti``, ``ncu``): runs of each side the measurement took (one sample per run;
    sampling stops once the speedup's 95% interval is within +/-2%, 3 to 10 runs a side). None where one
    process times many launches (the native methods, the kernelbench driver)."""
    reused: str | None = None
    """As for a stage: the timing of the check of the broken start, whose candidate this attempt's is."""
    floor_ms: float | None = Field(default=None, ge=0)
    """The hardware floor of the task's work on this GPU, milliseconds, when the candidate was faster than it
    (implausible); None otherwise."""
    remeasured: bool = False
    """Measured again because a CV was above 3%; the second measurement is the one kept."""
    gpu: str | None = None
    """The GPU a batch held alone for this timing (its index); None outside a batch."""
    runs_stopped: int = Field(default=0, ge=0)
    """Runs on the timing's GPU stopped (SIGSTOP) for it and continued after it (a batch's pool)."""
    rerun_stopped: bool = False
    """What was stopped was the run made again alone for its memory (runs_stopped counts it)."""
    idle_s: float | None = Field(default=None, ge=0)
    """With runs stopped: seconds from the stop until no kernel ran on the GPU."""
    builds_stopped: int = Field(default=0, ge=0)
    """Builds stopped (SIGSTOP) for this timing and continued after it (a batch's build slots)."""
    timed_again: str | None = None
    """Made again holding the GPU's memory, after the first timing ran out of memory beside the runs stopped
    for it: that timing's out-of-memory line."""
    driver_phases_s: dict[str, float] = Field(default_factory=dict)
    """kernelbench: host seconds of each phase of the timing driver (legacy.DRIVER_PHASES names them)."""
    driver_before_go: list[str] = Field(default_factory=list)
    """kernelbench: the phases a driver started ahead of the GPU hold ran before its go (not with it held)."""

    @field_validator("flags", mode="before")
    @classmethod
    def _flag_strings(cls, value: object) -> object:
        return flags_of(value)

    @model_validator(mode="before")
    @classmethod
    def _legacy_note(cls, data: object, info: ValidationInfo) -> object:
        """A version-1 file's timing: the facts its note said in words, as fields (legacy.py)."""
        if isinstance(info.context, dict) and info.context.get("format_version", FORMAT_VERSION) < 2:
            from beavertui.engine.session.legacy import timing_facts

            return timing_facts(data)
        return data

    @property
    def models_built_held_s(self) -> float | None:
        """kernelbench: seconds the driver built the models (loaded the candidate's module) with the GPU
        held; None when it did not record that phase or built them before the hold."""
        if "models" in self.driver_before_go:
            return None
        return self.driver_phases_s.get("models")


class KernelMetrics(Frozen):
    """One kernel's profiler metrics, averaged over its launches (timing/profile.py)."""

    name: str
    """Kernel name as the profiler reports it."""
    launches: int = 1
    """Launches profiled."""
    metrics: dict[str, float] = Field(default_factory=dict)
    """Short metric name -> value in base units (percent, bytes, registers, nanoseconds)."""
    stalls: dict[str, float] = Field(default_factory=dict)
    """Warp stall reason -> cycles waited per issued instruction."""
