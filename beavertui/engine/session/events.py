"""The event union: everything that happens in a repair session, one typed event per thing.

The saved session file is these events, one JSON object per line, after a versioned header line
(session.py writes and reads it). Live view, replay, stagnation detection, batch resume and the attempts
table all read only these events, so anything a pane or a metric needs must be recorded here.
Events are plain data: no behaviour, no I/O.
"""

from __future__ import annotations

import json
import re
import time
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    field_validator,
    model_serializer,
    model_validator,
)

from beavertui.engine.session.facts import Flag as Flag
from beavertui.engine.session.facts import Frozen, flags_of
from beavertui.engine.session.facts import KernelMetrics as KernelMetrics
from beavertui.engine.session.facts import SanitizerRecord as SanitizerRecord
from beavertui.engine.session.facts import StageResult as StageResult
from beavertui.engine.session.facts import TimingResult as TimingResult
from beavertui.engine.session.protocol import BASELINE_NAMES as BASELINE_NAMES  # the names a header may hold
from beavertui.engine.session.protocol import MAX_BUDGET, Detector, Protocol, with_legacy_gate
from beavertui.engine.session.version import FORMAT_VERSION as FORMAT_VERSION
from beavertui.engine.session.version import READABLE_VERSIONS as READABLE_VERSIONS


def now() -> float:
    """Wall-clock time stamp used in events (seconds since the epoch)."""
    return time.time()


_Frozen = Frozen


#: The longest reply kept, in characters; the loop drops the rest (and says so in the Reply).
MAX_REPLY_CHARS = 512 << 10

#: An attempt's 1-based iteration: at most the largest budget a protocol can have.
Iteration = Annotated[int, Field(ge=1, le=MAX_BUDGET)]

#: Terminal control characters (C0, DEL, C1): an escape sequence in a header's names would reach the
#: terminal of every viewer (``replay`` set the terminal's title from a model name).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _printable(value: str | None) -> str | None:
    if value is not None and _CONTROL.search(value):
        raise ValueError("holds a terminal control character")
    return value


#: A name shown as is on a terminal: no control characters.
Name = Annotated[str, AfterValidator(_printable)]
#: A name that must be given: at least one character, none of them a control character.
GivenName = Annotated[str, Field(min_length=1), AfterValidator(_printable)]


def has_control(value: str) -> bool:
    """Whether ``value`` holds a terminal control character (a name the session header would refuse)."""
    return _CONTROL.search(value) is not None


# --------------------------------------------------------------------------------------------- values


class Message(_Frozen):
    """One chat message exactly as sent to or received from the model."""

    role: Literal["system", "user", "assistant"]
    """Chat role."""
    content: str
    """Full text."""


class TaskRef(_Frozen):
    """What a session needs to know about its task, independent of the corpus still being on disk."""

    id: Name
    """Task id (folder name)."""
    family: Name
    """Kernel family."""
    label: Name
    """The broken start's label as given by the corpus (release labels kept verbatim)."""
    corpus: str
    """Corpus root the task was loaded from."""
    layout: Literal["native", "release"]
    """Corpus layout."""
    solution_file: str
    """Path of the solution inside the work dir."""
    language: str = "cuda"
    """Language of the solution (``cuda``, ``cpp``, ``python``)."""
    broken_start: str
    """Full text of the broken start."""
    reference: str | None = None
    """Full text of the reference solution (for the reference diff pane); None if not shipped."""
    broken_start_hash: str = ""
    """First 16 hex digits of sha256 of the broken start."""
    harness_hash: str | None = None
    """sha256 of the task's harness (testbench and shared folders, without the solution) when the
    session started; None in sessions written before it was recorded. Recorded outcomes are keyed by it."""
    observed_label: str | None = None
    """The category the broken start was seen to fail in when ``corpus validate`` ran it on this session's
    GPU, where that differs from ``label`` (a task usable with a corrected label); None where it agrees or
    the task was never validated there. ``metrics --by observed`` groups by it."""


class Prices(_Frozen):
    """What an endpoint charges, US dollars per million tokens (reasoning tokens are billed as output)."""

    input_per_mtok: float = Field(ge=0)
    """Prompt tokens."""
    output_per_mtok: float = Field(ge=0)
    """Completion tokens (reasoning tokens included, as the endpoints count them)."""

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """Dollars for one call; None when the endpoint did not report both counts."""
        if prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1e6


class Usage(_Frozen):
    """Tokens, time and cost of a session's model calls (every reply, those of redone attempts too)."""

    replies: int = Field(default=0, ge=0)
    """Replies received (from the endpoint or the reply cache)."""
    prompt_tokens: int = Field(default=0, ge=0)
    """Prompt tokens of the replies whose endpoint reported usage."""
    completion_tokens: int = Field(default=0, ge=0)
    """Completion tokens, reasoning included."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """Of the completion tokens, those spent reasoning, summed over the replies whose endpoint says."""
    unreported: int = Field(default=0, ge=0)
    """Replies without a usage report (scripted models, endpoints that send none)."""
    reasoning_unreported: int = Field(default=0, ge=0)
    """Of the replies with a usage report, those without a reasoning count (an endpoint that sends no
    ``completion_tokens_details.reasoning_tokens``): their reasoning is unknown, not 0, and in no sum. Absent
    from end lines written before it was recorded, read as 0 (every reasoning count taken as reported)."""
    latency_s: float = 0.0
    """Seconds waited for the replies fetched from the endpoint."""
    cost_usd: float | None = Field(default=None, ge=0)
    """The replies at the model's prices; None when it has none."""
    cached: int = Field(default=0, ge=0)
    """Replies served by the reply cache (not paid again)."""
    paid_usd: float | None = Field(default=None, ge=0)
    """cost_usd less the replies served by the reply cache."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def reasoning_reported(self) -> int:
        """Replies whose endpoint gave a reasoning count (0 included): those ``reasoning_tokens`` sums."""
        return max(0, self.replies - self.unreported - self.reasoning_unreported)


class ModelInfo(_Frozen):
    """The model under test, without credentials."""

    name: Name
    """Model name as sent to the endpoint, or ``scripted:FILE``, ``replay:SESSION``, ``human``."""
    kind: Literal["openai", "scripted", "replay", "human"]
    """Which model driver produced the replies."""
    base_url: str | None = None
    """Endpoint base URL (never the key)."""
    params: dict[str, object] = Field(default_factory=dict)
    """Sampling and request parameters (temperature, top_p, max_tokens, seed, reasoning_effort, ...)."""
    prices: Prices | None = None
    """What the endpoint charges, when the models file says."""
    entry: Name | None = None
    """The models-file entry or batch label that chose this model, when it is not the endpoint name."""
    identity: Name | None = None
    """The model as ``metrics`` groups it: the entry (else the name) and every setting that changes its
    output (``model_identity``). None in headers written before it was recorded: computed from them."""


#: Request settings that change what a model answers (temperature and seed belong to the protocol).
IDENTITY_PARAMS = ("reasoning_effort", "top_p", "max_tokens", "extra_body")


def model_identity(info: ModelInfo) -> str:
    """A model's identity: its models-file entry (or label, else its name), the endpoint model when that
    differs, and every request setting of ``IDENTITY_PARAMS`` it sends. Two entries that send one endpoint
    model at two reasoning efforts are two models. The recorded ``identity`` when the header has one."""
    if info.identity:
        return info.identity
    base = info.entry or info.name
    settings = [f"model={info.name}"] if info.entry and info.entry != info.name else []
    for key in IDENTITY_PARAMS:
        value = info.params.get(key)
        if value is None or value == {}:
            continue
        shown = json.dumps(value, sort_keys=True, separators=(",", ":")) if isinstance(value, dict) else value
        settings.append(f"{key}={shown}")
    shown = f"{base} [{', '.join(settings)}]" if settings else base
    return _CONTROL.sub("?", shown)


class GpuSignature(_Frozen):
    """The GPU and toolkit a session ran on (docs/metrics.md (speedup))."""

    slug: str
    """``<gpu name slug>_sm_<major><minor>_cuda_<major>_<minor>``."""
    name: str
    """GPU name as the driver reports it."""
    compute_capability: str
    """e.g. ``9.0``."""
    driver: str = ""
    """Driver version."""
    cuda: str = ""
    """CUDA toolkit version (nvcc)."""


class BaselineTime(_Frozen):
    """One named baseline of the session's task on its GPU, besides the reference (docs/metrics.md,
    Baselines): what it is, its stored time and how that time was measured."""

    name: Name
    """``eager``, ``compile``, ``compile_ro``, ``graph``, ``vendor`` or ``roofline`` (timing/named_baselines.py)."""
    median_ms: float = Field(gt=0)
    """Median time of one call, milliseconds (``roofline``: the least time the declared work can take)."""
    method: Name
    """How it was measured (``torch_events_l2flush``, ``torch_events_l2flush_queued``, ``roofline``)."""
    note: str = ""
    """What was timed and with what (torch version, library, calls, ceilings)."""


# --------------------------------------------------------------------------------------------- events


class _Event(_Frozen):
    t: float | None = Field(default_factory=now)
    """Time stamp, seconds since the epoch; None when the source did not record it (an imported run)."""


class ImportedFrom(_Frozen):
    """Where an imported session came from, and what its source did not record (set only on imports)."""

    source: str
    """The program that produced the records, e.g. ``CUDABeaver harness``."""
    run_dir: str
    """The source's run directory, as given to the import."""
    run_id: str
    """The source run's name (its folder name)."""
    experiment: str | None = None
    """The source's experiment name, where it has one."""
    records: list[str] = Field(default_factory=list)
    """The source's record ids that this session holds, in order."""
    not_recorded: list[str] = Field(default_factory=list)
    """What the source did not record: every event field standing for it is null or absent here."""
    derived: list[str] = Field(default_factory=list)
    """Values the import computed from recorded ones (and how), so that nothing reads as measured."""
    dropped: list[str] = Field(default_factory=list)
    """Records of this task that are not scored, each with the reason: left out of the session (an unknown
    category), or kept as an infrastructure error (an endpoint failure)."""


class SessionHeader(_Event):
    """First line of every session file."""

    kind: Literal["header"] = "header"
    format_version: int = FORMAT_VERSION
    """Session file format version."""
    session_id: Name
    """Unique id of this session."""
    tool_version: str
    """beavertui version that wrote it."""
    task: TaskRef
    """The task."""
    model: ModelInfo
    """The model under test."""
    protocol: Protocol
    """The protocol."""
    gpu: GpuSignature | None = None
    """Where it ran; None when no GPU was used (recorded toolchain)."""
    run_id: Name | None = None
    """Batch run id, if part of one."""
    sample: int = 0
    """Index of this trajectory among the task's samples under this protocol."""
    parent: str | None = None
    """Parent session path when this session is a branch."""
    branch_step: int | None = None
    """Iteration of the parent after which this branch starts."""
    notes: str | None = None
    """Free text, e.g. 'replies written by hand'."""
    imported: ImportedFrom | None = None
    """Set when the session was converted from another program's records (``beavertui import``)."""
    baselines: list[BaselineTime] = Field(default_factory=list)
    """The task's named baselines stored for this GPU when the session started (empty: none recorded, or
    written before they existed); each attempt's speedup against them is computed from its timing."""
    planner: ModelInfo | None = None
    """The model that wrote the plans (protocol ``planning = "plan"``); None: no plans, or a header written
    before plans were recorded."""
    summariser: ModelInfo | None = None
    """The model that condensed the feedback (feedback level L3S); None: no summaries."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_gate(cls, data: object) -> object:
        """A header written before ``gate_mode`` existed ran the in-loop gate: read it as such."""
        if isinstance(data, dict) and "protocol" in data:
            data = {**data, "protocol": with_legacy_gate(data["protocol"])}
        return data

    @model_serializer(mode="wrap")
    def _quiet_baselines(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """A header without named baselines is written as before they existed (no ``baselines`` key)."""
        data: dict[str, object] = handler(self)
        if not data.get("baselines"):
            data.pop("baselines", None)
        return data


class Request(_Event):
    """The messages sent to the model for one iteration, in full."""

    kind: Literal["request"] = "request"
    iteration: Iteration
    """1-based iteration."""
    messages: list[Message]
    """Exactly what was sent."""


class ReplyDelta(_Event):
    """A streamed piece of the model's reply. Shown live, never saved."""

    kind: Literal["reply_delta"] = "reply_delta"
    iteration: Iteration
    """1-based iteration."""
    text: str
    """The new text."""


class Reply(_Event):
    """The model's complete reply."""

    kind: Literal["reply"] = "reply"
    iteration: Iteration
    """1-based iteration."""
    content: str
    """Full reply text, up to MAX_REPLY_CHARS (the rest is dropped and counted in ``truncated_chars``)."""
    truncated_chars: int = Field(default=0, ge=0)
    """Characters of the endpoint's reply beyond MAX_REPLY_CHARS, not kept (0: the reply is whole)."""
    prompt_tokens: int | None = Field(default=None, ge=0)
    """Prompt tokens as reported by the endpoint."""
    completion_tokens: int | None = Field(default=None, ge=0)
    """Completion tokens as reported by the endpoint (reasoning tokens included)."""
    reasoning_tokens: int | None = Field(default=None, ge=0)
    """Of the completion tokens, those the endpoint says were spent reasoning."""
    latency_s: float | None = 0.0
    """Seconds from request to last token (for a reply from the cache: of the call that fetched it); None
    when not recorded (an imported run)."""
    cost_usd: float | None = Field(default=None, ge=0)
    """The call at the model's prices (header ``model.prices``); None without prices or usage."""
    cached: bool = False
    """Served by the reply cache: the same request was answered before and is not paid again."""
    finish_reason: str | None = None
    """Endpoint's finish reason."""
    retries: int = Field(default=0, ge=0)
    """Retries spent on this call."""
    retry_reasons: list[str] = Field(default_factory=list)
    """One line per failed try of this call (what failed, how long it waited and why)."""


class _Call(_Event):
    """A helper model's call (a planner's, a summariser's): what it was sent, what it wrote, what it cost."""

    iteration: Iteration
    """1-based iteration."""
    model: Name
    """The model that wrote it, as its header entry names it (``ModelInfo.entry`` or ``name``)."""
    messages: list[Message] = Field(default_factory=list)
    """Exactly what was sent to that model."""
    content: str
    """What it wrote, up to MAX_REPLY_CHARS."""
    truncated_chars: int = Field(default=0, ge=0)
    """Characters beyond MAX_REPLY_CHARS, not kept."""
    prompt_tokens: int | None = Field(default=None, ge=0)
    """Prompt tokens as reported by the endpoint."""
    completion_tokens: int | None = Field(default=None, ge=0)
    """Completion tokens as reported by the endpoint (reasoning tokens included)."""
    reasoning_tokens: int | None = Field(default=None, ge=0)
    """Of the completion tokens, those the endpoint says were spent reasoning."""
    latency_s: float | None = 0.0
    """Seconds from request to last token."""
    cost_usd: float | None = Field(default=None, ge=0)
    """The call at that model's prices; None without prices or usage."""
    cached: bool = False
    """Served by the reply cache."""
    finish_reason: str | None = None
    """Endpoint's finish reason."""
    retries: int = Field(default=0, ge=0)
    """Retries spent on this call."""
    retry_reasons: list[str] = Field(default_factory=list)
    """One line per failed try of this call."""


class Plan(_Call):
    """Protocol ``planning = "plan"``: the plan the planner wrote for this iteration, before its Request."""

    kind: Literal["plan"] = "plan"
    replaces: str | None = None
    """Set when the plan sent to the coder is not the planner's (attribution's dummy-plan control): why."""


class Summary(_Call):
    """Feedback level L3S: the summariser's condensed note on attempt ``iteration`` (what the next request
    carries in place of the L3 note)."""

    kind: Literal["summary"] = "summary"
    source_chars: int = Field(default=0, ge=0)
    """Characters of the L3 note it condensed."""


class Candidate(_Event):
    """The code extracted from a reply (or typed by a human)."""

    kind: Literal["candidate"] = "candidate"
    iteration: Iteration
    """1-based iteration."""
    code: str | None
    """The candidate source; None when no code was found."""
    sha256: str | None = None
    """sha256 of the normalised candidate (code.hashing.normalise)."""
    no_code_reason: str | None = None
    """Why no code was extracted."""
    diff: str = ""
    """Unified diff against the previous candidate (or the broken start)."""
    edited: bool = False
    """The user edited the candidate before it was built (live debugger)."""


class Built(_Event):
    """The build stage finished."""

    kind: Literal["build"] = "build"
    iteration: Iteration
    """1-based iteration."""
    result: StageResult
    """The build command's outcome."""


class Ran(_Event):
    """The test stage finished."""

    kind: Literal["run"] = "run"
    iteration: Iteration
    """1-based iteration."""
    result: StageResult
    """The test command's outcome."""


class Sanitized(_Event):
    """A compute-sanitizer run finished."""

    kind: Literal["sanitize"] = "sanitize"
    iteration: Iteration
    """1-based iteration."""
    tool: str
    """memcheck, racecheck, synccheck or initcheck."""
    result: StageResult
    """The sanitizer command's outcome."""
    records: list[SanitizerRecord] = Field(default_factory=list)
    """Parsed findings."""
    error_count: int | None = None
    """N of ``ERROR SUMMARY: N errors``; None if the summary was missing."""


class Timed(_Event):
    """Speedup measurement of a correct candidate."""

    kind: Literal["timing"] = "timing"
    iteration: Iteration
    """1-based iteration."""
    result: TimingResult
    """The measurement."""


class Profiled(_Event):
    """Feedback level L4: the candidate's kernels profiled with ncu, beside the reference's."""

    kind: Literal["profile"] = "profile"
    iteration: Iteration
    """1-based iteration."""
    candidate: list[KernelMetrics] = Field(default_factory=list)
    """The candidate's kernels, the longest first."""
    reference: list[KernelMetrics] = Field(default_factory=list)
    """The reference's kernels (profiled once per task and toolkit), the longest first."""
    result: StageResult
    """The profiler run of the candidate (its log is ncu's own output, not the CSV)."""
    raw: str = ""
    """ncu's CSV for the candidate, as written."""
    reference_raw: str = ""
    """ncu's CSV for the reference, as written."""


class Verdict(_Event):
    """The classified outcome of one attempt."""

    kind: Literal["verdict"] = "verdict"
    iteration: Iteration
    """1-based iteration."""
    category: str
    """One of docs/format.md (categories)."""
    signature: str | None
    """Normalised error signature ('' for passed); None when the source recorded none (an imported run)."""
    correct: bool
    """The harness's functional check passed."""
    speedup: float | None = None
    """reference / candidate time; None when not measured."""
    gate: float = 0.7
    """The gate p the attempt was judged against."""
    success: bool = False
    """correct and passes the gate."""
    reason: str = ""
    """Short human reason: 'passed', 'below gate', 'no code', or the category."""
    decisive: list[str] = Field(default_factory=list)
    """The decisive log lines (what the signature was taken from, and its neighbours)."""
    flags: list[Flag] = Field(default_factory=list)
    """Anti-cheat or audit flags with evidence, e.g. implausible_speedup with detail '14.2x'."""

    @field_validator("flags", mode="before")
    @classmethod
    def _flag_strings(cls, value: object) -> object:
        return flags_of(value)

    speedup_note: str | None = None
    """Why a correct attempt has no speedup (the reference cannot be built or timed here, or the task's
    family has no reference); such an attempt keeps its correctness and counts at p = 0 only."""
    timing_pending: bool = False
    """A correct attempt whose timing a batch's timing lane makes after the loop (a gate applied after the
    run: the speedup steers nothing). Its speedup and success are not known yet; the lane appends its timing,
    this verdict with them, and the session's end again (docs/format.md, Timing after the loop)."""


class Stalled(_Event):
    """A stagnation detector fired."""

    kind: Literal["stalled"] = "stalled"
    iteration: Iteration
    """Iteration after which it fired."""
    detector: Detector
    """Which detector."""
    detail: str = ""
    """Evidence, e.g. 'same as iteration 2'."""


class InfraError(_Event):
    """A failure of the infrastructure (endpoint, GPU, disk), not of the model."""

    kind: Literal["infra_error"] = "infra_error"
    iteration: Iteration
    """Iteration it hit."""
    source: Literal["endpoint", "gpu", "disk", "toolchain", "other"]
    """What failed."""
    detail: str
    """One-line description."""


class SessionEnd(_Event):
    """Last line of a complete session."""

    kind: Literal["end"] = "end"
    stop_reason: Literal[
        "passed",
        "budget",
        "duplicate_code",
        "code_cycle",
        "category_oscillation",
        "no_progress",
        "error",
        "stopped",
        "unusable",
    ]
    """Why the loop stopped (docs/metrics.md), or 'stopped' by the user, or ``unusable``: the task cannot be
    scored on this GPU (its reference fails here, or its broken start needs no repair), found by the
    batch's own check before the first turn (``detail`` says why); such a session has no attempt."""
    iterations: Annotated[int, Field(ge=0, le=MAX_BUDGET)]
    """Attempts made."""
    success: bool
    """Some attempt succeeded at the protocol's gate."""
    best_speedup: float | None = None
    """Best speedup among correct attempts."""
    detail: str | None = None
    """Error detail when stop_reason is 'error', the reason when it is 'unusable'."""
    usage: Usage | None = None
    """Tokens, time and cost of every reply of the session (absent in files of older versions)."""
    planner_usage: Usage | None = None
    """Tokens, time and cost of every plan of the session (its planner's calls); None without plans."""
    summariser_usage: Usage | None = None
    """Tokens, time and cost of every feedback summary (the summariser's calls); None without summaries."""
    timing_pending: int = Field(default=0, ge=0)
    """Correct attempts still waiting for the batch's timing lane (their verdicts say ``timing_pending``):
    the loop has ended, its scores are not final. The lane appends each timing with its verdict, then this
    end again with the count at 0; the last end of a file is the one that holds."""


Event = Annotated[
    Request
    | ReplyDelta
    | Reply
    | Plan
    | Summary
    | Candidate
    | Built
    | Ran
    | Sanitized
    | Timed
    | Profiled
    | Verdict
    | Stalled
    | InfraError
    | SessionEnd,
    Field(discriminator="kind"),
]
"""Any event after the header."""

AnyLine = Annotated[
    SessionHeader
    | Request
    | ReplyDelta
    | Reply
    | Plan
    | Summary
    | Candidate
    | Built
    | Ran
    | Sanitized
    | Timed
    | Profiled
    | Verdict
    | Stalled
    | InfraError
    | SessionEnd,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
LINE_ADAPTER: TypeAdapter[SessionHeader | Event] = TypeAdapter(AnyLine)

#: Events shown live but never written to a session file.
TRANSIENT_KINDS = frozenset({"reply_delta"})
