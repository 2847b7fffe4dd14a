"""The protocol a session runs under (shared/spec/metrics.md): recorded in every session header.

A protocol says *how* a model is asked to repair a kernel. Results are only comparable under the same
protocol, so every field here is saved and every report groups by it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Highest speedup gate p a protocol may set: the top of the metrics' p sweep (3x the reference's speed).
MAX_GATE = 3.0
#: Highest iteration budget K.
MAX_BUDGET = 100

Method = Literal["iterative", "repeated"]
Feedback = Literal["L0", "L1", "L2", "L3", "L4"]
Detector = Literal["duplicate_code", "code_cycle", "category_oscillation", "no_progress"]
DETECTORS: tuple[Detector, ...] = ("duplicate_code", "code_cycle", "category_oscillation", "no_progress")
SanitizerTool = Literal["memcheck", "racecheck", "synccheck", "initcheck"]
FeedbackComponent = Literal["compiler", "runtime", "sanitizer", "timing", "profile"]
FEEDBACK_COMPONENTS: tuple[FeedbackComponent, ...] = ("compiler", "runtime", "sanitizer", "timing", "profile")


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
    """category_oscillation fires at this many category changes inside the window."""
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


class Protocol(BaseModel):
    """Every axis that changes a score: method, budget, feedback, history, temperature, gate."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    method: Method = "iterative"
    """``iterative``: feedback between iterations; ``repeated``: independent samples of the first turn."""
    budget: int = Field(default=5, ge=1, le=MAX_BUDGET)
    """K: the iteration budget (iterative) or the number of samples (repeated)."""
    feedback: Feedback = "L3"
    """L0 none, L1 failed/try again, L2 + category and decisive lines, L3 + logs/sanitizer/speedup, L4 + ncu."""
    feedback_components: tuple[FeedbackComponent, ...] | None = None
    """Only these parts of the level's feedback are sent (compiler: build log and build-stage outcome;
    runtime: run log and run-stage outcome; sanitizer; timing; profile); None sends all of them."""
    history: int = Field(default=2, ge=1, le=4)
    """Rounds of prior (request, reply, feedback) turns kept in the conversation."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature sent to the model."""
    gate: float = Field(default=0.7, ge=0.0, le=MAX_GATE)
    """In-loop speedup gate p: a correct candidate slower than p x the reference fails (below gate)."""
    continue_after_pass: bool = False
    """Spend the whole budget even after a success (makes every p of the p sweep exact)."""
    self_source: bool = False
    """The model under test produced this task's broken start (budget rule of metrics.md)."""
    sanitize_on_failure: bool = True
    """Run memcheck after a failing or suspicious run (categories.md sanitizer override)."""
    sanitize_tools: tuple[SanitizerTool, ...] = ()
    """Extra sanitizer tools run on every attempt that built."""
    stagnation: StagnationSettings = StagnationSettings()
    """Stagnation detector settings."""
    seed: int | None = None
    """Seed sent to the model, where the endpoint honours one."""

    def short(self) -> str:
        """A compact one-line label, e.g. ``iterative K5 L3 H2 T0.0 p0.7``."""
        label = (
            f"{self.method} K{self.budget} {self.feedback} H{self.history} "
            f"T{self.temperature:g} p{self.gate:g}"
        )
        if self.feedback_components is not None:
            label += " F" + ("+".join(self.feedback_components) or "none")
        return label

    def key(self) -> dict[str, object]:
        """The six fields that identify a protocol in the attempts table (metrics.md)."""
        return {
            "method": self.method,
            "feedback": self.feedback,
            "history": self.history,
            "temperature": self.temperature,
            "gate": self.gate,
            "budget": self.budget,
        }
