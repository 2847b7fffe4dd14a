"""The protocol a session runs under (docs/metrics.md): recorded in every session header.

A protocol says *how* a model is asked to repair a kernel. Results are only comparable under the same
protocol, so every field here is saved and every report groups by every field that changes behaviour.
The field defaults are the CUDABeaver paper's default protocol (iterative, K = 5, L3, H = 4, T = 0.7,
p = 0.7 applied to the recorded speedups after the run); ``beavertui/protocols/paper.toml`` spells it out.
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from beavertui.engine.limits import MAX_BUDGET as MAX_BUDGET
from beavertui.engine.limits import MAX_FEW_SHOT, MAX_HISTORY, MAX_TEMPERATURE
from beavertui.engine.limits import MAX_GATE as MAX_GATE

Method = Literal["iterative", "repeated"]
GateMode = Literal["after_run", "in_loop"]
RunLimit = Literal["reference", "flat"]
Feedback = Literal["L0", "L1", "L2", "L3", "L3S", "L3_raw", "L4"]
#: The parts of a note L3_raw is made of (the release's raw build and test output): the only components it
#: can leave out.
RAW_COMPONENTS: tuple[str, ...] = ("compiler", "runtime")
#: ``implicit``: one call writes the candidate (the paper's loop); ``plan``: a planning call writes a plan,
#: then a coding call writes the candidate from it (docs/protocols.md).
Planning = Literal["implicit", "plan"]
#: The release's few-shot strategies (its Exp 5, harness/few_shot.py; docs/protocols.md): ``matched`` is its
#: ``matched-error-category``; ``none`` sends no examples (the paper's default).
FewShot = Literal["none", "matched", "random", "curated"]
#: The release's seed of the few-shot draw (``few_shot_pair_pool_seed``).
FEW_SHOT_SEED = 42
#: The release's default few-shot pool and curated map (its configs' few_shot_pool_committee_dirs and
#: few_shot_curated_file, relative to the release root): its authors' runs, not in the public release.
RELEASE_FEW_SHOT_POOL: tuple[str, ...] = (
    "evaluation/outputs/gemma4/20260424_123214",
    "evaluation/outputs/glm_4_7/20260424_151941",
)
RELEASE_FEW_SHOT_CURATED = "evaluation/few_shot_curated.json"
#: Protocol fields added after sessions and run folders were first written: left out of a saved protocol
#: (and of a run folder's name) while at their default, so that what was written before reads the same.
_QUIET_DEFAULTS: dict[str, object] = {
    "planning": "implicit",
    "coder_feedback": True,
    "planner": None,
    "summariser": None,
    "gate_baseline": "reference",
    "few_shot": "none",
    "few_shot_k": 0,
    "few_shot_seed": FEW_SHOT_SEED,
    "few_shot_pool": (),
    "few_shot_curated": None,
}
Detector = Literal["duplicate_code", "code_cycle", "category_oscillation", "no_progress"]
DETECTORS: tuple[Detector, ...] = ("duplicate_code", "code_cycle", "category_oscillation", "no_progress")
SanitizerTool = Literal["memcheck", "racecheck", "synccheck", "initcheck"]
FeedbackComponent = Literal["compiler", "runtime", "sanitizer", "timing", "profile", "static"]
FEEDBACK_COMPONENTS: tuple[FeedbackComponent, ...] = (
    "compiler",
    "runtime",
    "sanitizer",
    "timing",
    "profile",
    "static",
)


class StagnationSettings(BaseModel):
    """Which stagnation detectors run and whether a firing one stops the loop."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    enabled: tuple[Detector, ...] = DETECTORS
    """Detectors that are evaluated after every attempt."""
    stop: bool = True
    """Whether a firing detector ends the session (stop_reason = the detector's name)."""
    oscillation_window: int = Field(default=5, ge=2, le=MAX_BUDGET)
    """category_oscillation looks at this many most recent attempts."""
    oscillation_changes: int = Field(default=3, ge=1, le=MAX_BUDGET)
    """category_oscillation fires at this many changes of category in the window."""
    oscillation_rule: Literal["changes", "jumps"] = "changes"
    """``changes`` (the release's harness/stagnation.py): any change of category between consecutive judged
    attempts counts, and the window must be full; ``jumps`` (beavertui's earlier, stricter rule, a departure
    from the release): only changes among failing categories back to one already seen in the window."""
    no_progress_run: int = Field(default=3, ge=2, le=MAX_BUDGET)
    """no_progress fires after this many consecutive attempts with one category and one signature."""

    @model_validator(mode="after")
    def _changes_fit_the_window(self) -> StagnationSettings:
        if self.oscillation_changes >= self.oscillation_window:
            raise ValueError(
                f"oscillation_changes ({self.oscillation_changes}) must be below oscillation_window "
                f"({self.oscillation_window}): a window of n attempts holds at most n - 1 changes"
            )
        return self


#: The named baselines besides the reference, in the order tables show them (timing/named_baselines.py).
BASELINE_NAMES: tuple[str, ...] = ("eager", "compile", "compile_ro", "graph", "vendor", "roofline")


class Protocol(BaseModel):
    """Every axis that changes a score: method, budget, feedback, history, temperature, gate."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    method: Method = "iterative"
    """``iterative``: feedback between iterations; ``repeated``: independent samples of the first turn."""
    budget: int = Field(default=5, ge=1, le=MAX_BUDGET)
    """K: the iteration budget (iterative) or the number of samples (repeated)."""
    feedback: Feedback = "L3"
    """L0 none, L1 failed/try again, L2 the release's: compiler errors only (a run-time failure: "compiled but
    the test failed"), L3 + outcome, decisive lines, logs/sanitizer/speedup, L3S L3 condensed by the
    ``summariser`` model before the coder reads it, L3_raw the release's raw mode of L3 (its build and test
    output and the previous code, no category or hints: prompts.raw_feedback), L4 + ncu."""
    feedback_components: tuple[FeedbackComponent, ...] | None = None
    """Only these parts of the level's feedback are sent (compiler: build log and build-stage outcome;
    runtime: run log and run-stage outcome; sanitizer; timing; profile; static: compiler warnings and a lint
    of the candidate, sent only when named); None sends all of the level's parts (never ``static``); an
    empty tuple sends the no-feedback note (nothing about the attempt's outcome)."""
    history: int = Field(default=4, ge=1, le=MAX_HISTORY)
    """Rounds of prior (request, reply, feedback) turns kept in the conversation."""
    temperature: float = Field(default=0.7, ge=0.0, le=MAX_TEMPERATURE)
    """Sampling temperature sent to the model (the paper: 0.7 iterative, 1.0 repeated)."""
    gate: float = Field(default=0.7, ge=0.0, le=MAX_GATE)
    """Speedup gate p: an attempt succeeds when correct and its speedup >= p (p = 0: correct suffices)."""
    gate_mode: GateMode = "after_run"
    """``after_run`` (the paper): the first correct attempt ends the trajectory and p is applied to its
    recorded speedup afterwards. ``in_loop``: a correct attempt below p is a failure, the model is told it
    is too slow and the loop goes on (a different protocol, with its own axis)."""
    gate_baseline: str = "reference"
    """What the gate p is applied to (docs/metrics.md, Baselines): ``reference`` (the paper), or a named
    baseline of the task (``eager``, ``compile``, ``compile_ro``, ``graph``, ``vendor``, ``roofline``): an
    attempt succeeds when correct and its speedup against that baseline is at least p. Only after the run
    (the loop's own gate is against the reference); a task without that baseline on the session's GPU counts
    at p = 0 only."""
    continue_after_pass: bool = False
    """Spend the whole budget even after a success (makes every p of the p sweep exact)."""
    self_source: bool = False
    """The model under test produced this task's broken start (budget rule of docs/metrics.md)."""
    sanitize_on_failure: bool = True
    """Run memcheck after a failing or suspicious run (docs/format.md (categories) sanitizer override)."""
    sanitize_tools: tuple[SanitizerTool, ...] = ()
    """Extra sanitizer tools run on every attempt that built."""
    stagnation: StagnationSettings = StagnationSettings()
    """Stagnation detector settings."""
    seed: int | None = None
    """Seed sent to the model, where the endpoint honours one."""
    planning: Planning = "implicit"
    """``implicit``: the model writes the candidate in one call, planning (if at all) inside it (the paper);
    ``plan``: each iteration a planning call (the task, the current code and the feedback) writes a plan,
    then a coding call writes the candidate from it (a ``Plan`` event, then the ``Request``)."""
    coder_feedback: bool = True
    """With ``planning = "plan"``: the coding call sees the feedback and the conversation as well as the plan
    (P+F), or only the task, the current code and the plan (P+NF, ``false``)."""
    planner: str | None = Field(default=None, min_length=1, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")
    """With ``planning = "plan"``: the model that plans (a name as ``--model`` takes it, resolved through the
    models file: its own endpoint, tokens and prices); None: the coding model plans too. A planner other
    than the coder is plan transfer."""
    summariser: str | None = Field(default=None, min_length=1, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")
    """With feedback ``L3S``: the model that condenses each L3 note (a name as ``--model`` takes it); None:
    the coding model condenses its own feedback."""
    few_shot: FewShot = "none"
    """The release's few-shot examples (docs/protocols.md): ``matched`` (examples whose broken code failed in
    the task's labelled category, padded at random), ``random``, ``curated`` (a hand-made map of task to
    examples, ``few_shot_curated``), appended to the system message; ``none`` (the paper's default)."""
    few_shot_k: int = Field(default=0, ge=0, le=MAX_FEW_SHOT)
    """K: how many examples (the release's grid: 1, 3, 5); 0 with ``few_shot = "none"`` only."""
    few_shot_seed: int = FEW_SHOT_SEED
    """The seed of the draw of ``matched`` and ``random`` examples (the release's ``few_shot_pair_pool_seed``)."""
    few_shot_pool: tuple[str, ...] = ()
    """Harness run folders of the release's format (``index/manifest.jsonl``, ``error_code/``,
    ``build_log_raw/``) the examples are taken from (the release's ``few_shot_pool_committee_dirs``); a
    relative path is read from the release root (the folder holding the corpus's ``data/``), or the corpus
    folder. The public release ships none."""
    few_shot_curated: str | None = Field(default=None, min_length=1)
    """With ``few_shot = "curated"``: the JSON map of task to example tasks (the release's
    ``few_shot_curated_file``, ``evaluation/few_shot_curated.json``, which the public release does not ship);
    a relative path is read as ``few_shot_pool``'s are."""
    run_limit: RunLimit = "reference"
    """The time limit of a correctness run: ``reference``, a generous factor of the task's reference run on
    this GPU, with a floor, never above the task's own limit (the task's own limit where no reference run
    time is known); ``flat``, the task's own limit always (the release: 300 s), for exact reproduction. Only
    a candidate slower than the factor can tell them apart, and it fails every gate p above 1 / factor
    (docs/metrics.md, Time limits)."""

    @model_validator(mode="after")
    def _axes_fit(self) -> Protocol:
        if self.planning == "implicit" and (self.planner is not None or not self.coder_feedback):
            raise ValueError('planner and coder_feedback = false need planning = "plan"')
        if self.summariser is not None and self.feedback != "L3S":
            raise ValueError('a summariser needs feedback = "L3S"')
        if self.few_shot == "none":
            if (
                self.few_shot_k
                or self.few_shot_pool
                or self.few_shot_curated
                or self.few_shot_seed != FEW_SHOT_SEED
            ):
                raise ValueError(
                    "few_shot_k, few_shot_pool, few_shot_curated and few_shot_seed need few_shot"
                )
        else:
            if self.few_shot_k < 1:
                raise ValueError(
                    f"few_shot {self.few_shot!r} needs few_shot_k, the number of examples (1 or more)"
                )
            if (self.few_shot == "curated") != (self.few_shot_curated is not None):
                raise ValueError('few_shot_curated goes with few_shot = "curated", and it needs one')
            if self.planning != "implicit":
                raise ValueError(
                    'few_shot examples go with planning = "implicit" (the release\'s one-call loop)'
                )
        if self.feedback == "L3_raw" and self.feedback_components:
            other = [c for c in self.feedback_components if c not in RAW_COMPONENTS]
            if other:
                raise ValueError(
                    f"feedback L3_raw sends only the build and test output: components {', '.join(other)} "
                    "would change nothing (L3_raw takes compiler and runtime)"
                )
        return self

    @model_serializer(mode="wrap")
    def _quiet(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, object]:
        data: dict[str, object] = handler(self)
        for name, default in _QUIET_DEFAULTS.items():
            if name in data and (data[name] == default or (default == () and data[name] == [])):
                del data[name]
        return data

    @model_validator(mode="after")
    def _gate_baseline(self) -> Protocol:
        if self.gate_baseline != "reference" and self.gate_baseline not in BASELINE_NAMES:
            raise ValueError(
                f"gate_baseline {self.gate_baseline!r}: expected reference or one of {', '.join(BASELINE_NAMES)}"
            )
        if self.gate_baseline != "reference" and self.gate_mode == "in_loop":
            raise ValueError(
                f"gate_baseline {self.gate_baseline!r} needs gate_mode after_run: the in-loop gate is the "
                "reference's, applied while the loop runs"
            )
        return self

    def ends_on(self, correct: bool, success: bool) -> bool:
        """Whether an attempt with this outcome ends an iterative trajectory as ``passed``."""
        if self.continue_after_pass:
            return False
        return correct if self.gate_mode == "after_run" else success

    def short(self) -> str:
        """A compact one-line label, e.g. ``iterative K5 L3 H4 T0.7 p0.7``."""
        return protocol_label(self.key())

    def key(self) -> dict[str, object]:
        """The protocol object of the attempts table (docs/format.md): every field that changes what
        the loop does, lists written as ``+``-joined strings."""
        return {
            "method": self.method,
            "feedback": self.feedback,
            "history": self.history,
            "temperature": self.temperature,
            "gate": self.gate,
            "budget": self.budget,
            "gate_mode": self.gate_mode,
            "continue_after_pass": self.continue_after_pass,
            "stagnation": stagnation_label(self.stagnation),
            "feedback_components": components_label(self.feedback_components),
            "sanitize": sanitize_label(self.sanitize_on_failure, self.sanitize_tools),
            "planning": planning_label(self.planning, self.coder_feedback),
            "planner": self.planner or "self",
            "summariser": self.summariser or "self",
            "few_shot": few_shot_label(self.few_shot, self.few_shot_k, self.few_shot_seed),
            **({"gate_baseline": self.gate_baseline} if self.gate_baseline != "reference" else {}),
        }


def with_legacy_gate(data: object) -> object:
    """A saved protocol written before ``gate_mode`` existed ran the in-loop gate: read it as such."""
    if isinstance(data, dict) and "gate_mode" not in data:
        return {**data, "gate_mode": "in_loop"}
    return data


#: Values the extra protocol keys take in a table written before they existed (every earlier session
#: ran the in-loop gate, stopped on stagnation with every detector, sent every feedback component and
#: ran memcheck on failures).
LEGACY_KEY_DEFAULTS: dict[str, object] = {
    "gate_mode": "in_loop",
    "continue_after_pass": False,
    "stagnation": "stop",
    "feedback_components": "all",
    "sanitize": "on_failure",
    "planning": "implicit",
    "planner": "self",
    "summariser": "self",
    "few_shot": "none",
}


def few_shot_label(strategy: str, k: int, seed: int = FEW_SHOT_SEED) -> str:
    """``none``, or the release's axis value ``matched_K3`` (``_seedN`` added for another seed)."""
    if strategy == "none":
        return "none"
    return f"{strategy}_K{k}" + ("" if seed == FEW_SHOT_SEED else f"_seed{seed}")


def planning_label(planning: str, coder_feedback: bool) -> str:
    """``implicit``, ``plan+F`` (the coder sees plan and feedback) or ``plan+NF`` (the plan alone)."""
    if planning == "implicit":
        return "implicit"
    return "plan+F" if coder_feedback else "plan+NF"


def stagnation_label(s: StagnationSettings) -> str:
    """``stop`` (every detector, default thresholds, stops the loop), ``report`` (never stops), or
    ``stop:`` followed by the enabled detectors and thresholds that differ from the defaults."""
    if not s.stop or not s.enabled:
        return "report"
    parts = [] if set(s.enabled) == set(DETECTORS) else ["+".join(d for d in DETECTORS if d in s.enabled)]
    if (s.oscillation_window, s.oscillation_changes, s.no_progress_run) != (5, 3, 3):
        parts.append(f"osc{s.oscillation_changes}/{s.oscillation_window},np{s.no_progress_run}")
    if s.oscillation_rule != "changes":
        parts.append(f"osc={s.oscillation_rule}")
    return "stop" + (":" + ",".join(parts) if parts else "")


def components_label(components: tuple[str, ...] | None) -> str:
    """``all``, ``none``, or the components joined with ``+``."""
    if components is None:
        return "all"
    return "+".join(components) or "none"


def sanitize_label(on_failure: bool, tools: tuple[str, ...]) -> str:
    """``on_failure`` (memcheck after a failing run), extra tools joined with ``+``, or ``none``."""
    parts = (["on_failure"] if on_failure else []) + list(dict.fromkeys(tools))
    return "+".join(parts) or "none"


def protocol_label(key: dict[str, object]) -> str:
    """The one-line label of a protocol object; settings at their default add nothing."""
    label = (
        f"{key['method']} K{key['budget']} {key['feedback']} H{key['history']} "
        f"T{float(key['temperature']):g} p{float(key['gate']):g}"  # type: ignore[arg-type]
    )
    extras = []
    if key.get("gate_mode", "after_run") == "in_loop":
        extras.append("in-loop")
    if key.get("continue_after_pass"):
        extras.append("all-K")
    if key.get("stagnation", "stop") != "stop":
        extras.append(f"stag={key['stagnation']}")
    if key.get("feedback_components", "all") != "all":
        extras.append(f"F{key['feedback_components']}")
    if key.get("sanitize", "on_failure") != "on_failure":
        extras.append(f"san={key['sanitize']}")
    if key.get("planning", "implicit") != "implicit":
        extras.append(str(key["planning"]))
    if key.get("planner", "self") != "self":
        extras.append(f"planner={key['planner']}")
    if key.get("summariser", "self") != "self":
        extras.append(f"summariser={key['summariser']}")
    if key.get("few_shot", "none") not in ("none", None, ""):
        extras.append(f"few-shot={key['few_shot']}")
    if key.get("gate_baseline", "reference") not in ("reference", None, ""):
        extras.append(f"p-vs={key['gate_baseline']}")
    return " ".join([label, *extras])
