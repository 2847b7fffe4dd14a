"""Feedback attribution runs: branches from frozen steps with every subset of the feedback components.

For a frozen step k of a recorded session and components C, every subset S of C gets N branches whose
protocol sends only the components in S (``Protocol.feedback_components``, at level L3, or L4 when
``profile`` is among them), whose stagnation detectors do not stop it, and whose budget ends at
iteration k + h (the horizon h, default 1): the outcome of a branch is the best of its h new attempts,
so the only thing that differs between subsets is the feedback from attempt k on. Outcomes are
compiled (an attempt got past the build-stage categories), correct (the harness passed) and passed
(correct and at the gate). attribution.py turns them into Shapley and Banzhaf values.

Controls, beside the game (docs/analysis.md): the empty subset is the no-feedback condition (the L0 note,
nothing about the outcome), with the conversation kept (the protocol's history window) or dropped (every
request is the first turn again, as L0 does); the randomised-feedback control sends, in place of each
note, the full-coalition note of another task's attempt of the same category, drawn with a seeded
generator from a pool of donor sessions, and records which.

Under a planning protocol (``planning = "plan"``) the plan can be a player too: ``plan`` among the
components gives the coalitions that hold it the planner's plan and the others a fixed, content-free plan
(the dummy plan, DUMMY_PLAN), so that every branch makes the same two calls and only what the plan says
differs; the Shapley and Banzhaf interactions of ``plan`` with a feedback component then say how much that
component matters only with a plan. The dummy-plan control (every feedback component, the dummy plan) is
the coalition without ``plan`` when it is a player, or ``samples`` branches of its own (``dummy_plan``).

Each branch is written as a session file under the output folder. Branches hit by an infrastructure
failure have no outcome and are left out (and counted). Must not render anything.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from beavertui.engine.analysis.attribution import (
    MEASURES,
    Attribution,
    Estimate,
    Game,
    attribute,
    control_estimates,
    subsets,
)
from beavertui.engine.analysis.branch import BranchError, branch_session
from beavertui.engine.corpus.task import Task
from beavertui.engine.judge.classify import compiled
from beavertui.engine.loop.prompts import feedback
from beavertui.engine.models.base import Completion, DeltaCallback, Model
from beavertui.engine.session.events import (
    Event,
    InfraError,
    Message,
    ModelInfo,
    Request,
    SessionHeader,
    Verdict,
)
from beavertui.engine.session.protocol import FEEDBACK_COMPONENTS, Protocol
from beavertui.engine.session.state import AttemptState, fold
from beavertui.engine.session.store import read_session, record
from beavertui.engine.toolchain.base import Toolchain

NoFeedbackHistory = Literal["kept", "dropped"]
#: The conditions a branch can run under: a subset of the components (the game), or a control.
Condition = Literal["coalition", "random", "dummy_plan"]

#: The player that stands for the planner's plan (a planning protocol only).
PLAN = "plan"
#: The dummy plan: what a coalition without ``plan`` (and the dummy-plan control) is given instead of the
#: planner's plan. It names no fault, no fix and nothing of the task.
DUMMY_PLAN = "1. Read the task and the current code.\n2. Write the complete corrected file."


class DummyPlanner:
    """The planner of the dummy-plan control: every call answers DUMMY_PLAN (its Plan events say so)."""

    replaces = "dummy-plan control: a fixed content-free plan in place of the planner's"

    def info(self) -> ModelInfo:
        return ModelInfo(name="dummy-plan", kind="scripted")

    def secrets(self) -> tuple[str, ...]:
        return ()

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        if on_delta is not None:
            on_delta(DUMMY_PLAN)
        return Completion(content=DUMMY_PLAN, finish_reason="stop")


@dataclass(frozen=True)
class BranchOutcome:
    """What one attribution branch's new attempts achieved."""

    parent: str
    """Parent session path."""
    step: int
    """The frozen step."""
    subset: frozenset[str]
    """Feedback components the branch was given, and ``plan`` when it got the planner's plan (every
    component under test for the random control, every feedback component for the dummy-plan control)."""
    sample: int
    compiled: bool | None
    """None when an infrastructure failure left the attempts without a verdict."""
    correct: bool | None
    passed: bool | None
    path: Path | None
    """The branch's session file."""
    condition: Condition = "coalition"
    """``coalition``: a player of the game; ``random``: the randomised-feedback control; ``dummy_plan``:
    the dummy-plan control run on its own (``plan`` not a player)."""
    donors: tuple[str, ...] = ()
    """Random control: where each note sent came from (``TASK (SESSION iteration N)``), in order."""
    horizon: int = 1
    """Attempts after the frozen step whose best outcome this is."""

    def value(self, measure: str) -> float | None:
        v = getattr(self, measure)
        return None if v is None else float(v)


def attribution_protocol(
    parent: Protocol,
    subset: frozenset[str],
    step: int,
    *,
    horizon: int = 1,
    no_feedback: NoFeedbackHistory = "kept",
) -> Protocol:
    """The parent's protocol with only ``subset`` in the feedback and ``horizon`` attempts after ``step``
    (summarised, as the parent's, when it ran L3S).

    The empty subset is the no-feedback condition: the note says nothing about the attempt; with
    ``no_feedback="dropped"`` the level is L0, whose requests are the first turn again (no history)."""
    if horizon < 1:
        raise BranchError("the horizon must be 1 or more attempts")
    level = "L4" if "profile" in subset else "L3S" if parent.feedback == "L3S" else "L3"
    if not subset and no_feedback == "dropped":
        level = "L0"
    return parent.model_copy(
        update={
            "method": "iterative",
            "feedback": level,
            "summariser": parent.summariser if level == "L3S" else None,
            "feedback_components": tuple(c for c in FEEDBACK_COMPONENTS if c in subset),
            "budget": step + horizon,
            "continue_after_pass": False,
            # The frozen prefix may already trip a detector; the new attempts must run regardless.
            "stagnation": parent.stagnation.model_copy(update={"stop": False}),
        }
    )


def outcome_of(events: Sequence[Event], iteration: int) -> tuple[bool, bool, bool] | None:
    """(compiled, correct, passed) of the attempt at ``iteration``; None without a verdict. A build that hit
    its time limit did not compile (classify.compiled)."""
    verdict = next((e for e in events if isinstance(e, Verdict) and e.iteration == iteration), None)
    if verdict is None:
        return None
    return compiled(verdict.category, verdict.signature), verdict.correct, verdict.success


def outcome_over(
    events: Sequence[Event], first: int, last: int
) -> tuple[bool | None, bool | None, bool | None]:
    """The best outcome of the attempts ``first..last``: each measure is true when any attempt reached it.

    A measure no attempt reached is false when every attempt of the window was judged (or the branch
    stopped on a pass), and None (no outcome) when an infrastructure failure cut the window short."""
    got = [o for i in range(first, last + 1) if (o := outcome_of(events, i)) is not None]
    cut = any(isinstance(e, InfraError) and first <= e.iteration <= last for e in events)
    best: list[bool | None] = []
    for k in range(3):
        if any(o[k] for o in got):
            best.append(True)
        else:
            best.append(None if cut or not got else False)
    return best[0], best[1], best[2]


def _label(subset: frozenset[str], components: Sequence[str]) -> str:
    return "+".join(c for c in components if c in subset) or "none"


@dataclass(frozen=True)
class Donor:
    """A judged attempt whose feedback the randomised-feedback control may send to another task."""

    task: str
    session: str
    iteration: int
    category: str
    attempt: AttemptState

    def name(self) -> str:
        return f"{self.task} ({self.session} iteration {self.iteration})"


def donor_pool(paths: Sequence[str | Path]) -> list[Donor]:
    """Every judged, failed attempt with a reply of the given sessions (branches left out), in path order."""
    pool: list[Donor] = []
    for path in sorted(Path(p) for p in paths):
        header, events, _problem = read_session(path)
        if header is None or header.parent is not None:
            continue
        for a in fold(header, events).attempts:
            if a.verdict is not None and not a.verdict.success and a.reply is not None:
                pool.append(Donor(header.task.id, str(path), a.iteration, a.verdict.category, a))
    return pool


class RandomFeedback:
    """The control's notes: for each attempt, the full-coalition note of another task's attempt of the same
    category, drawn by a generator seeded with (seed, key, iteration); with no such donor, the no-feedback
    note. ``used`` records each draw with the iteration of the attempt it answers."""

    def __init__(
        self,
        pool: Sequence[Donor],
        task_id: str,
        components: Sequence[str],
        language: str,
        seed: int,
        key: str,
    ) -> None:
        self.pool, self.task_id, self.language = pool, task_id, language
        self.components = tuple(c for c in FEEDBACK_COMPONENTS if c in components)
        self.level: Literal["L3", "L4"] = "L4" if "profile" in components else "L3"
        self.seed, self.key = seed, key
        self.used: list[tuple[int, str]] = []

    def choices(self, category: str | None) -> list[Donor]:
        return [d for d in self.pool if d.task != self.task_id and d.category == category]

    def __call__(self, attempt: AttemptState, note: str) -> str:
        category = attempt.verdict.category if attempt.verdict is not None else None
        choices = self.choices(category)
        if not choices:
            self.used.append((attempt.iteration, f"no donor of category {category}: no-feedback note"))
            return feedback(attempt, self.level, self.language, ())
        donor = random.Random(f"{self.seed}/{self.key}/{attempt.iteration}").choice(choices)
        self.used.append((attempt.iteration, donor.name()))
        return feedback(donor.attempt, self.level, self.language, self.components)


def run_attribution(
    parent_path: str | Path,
    step: int,
    components: Sequence[str],
    samples: int,
    task: Task,
    model_factory: Callable[[], Model],
    toolchain: Toolchain,
    out_dir: str | Path,
    *,
    protocol_update: dict[str, object] | None = None,
    on_outcome: Callable[[BranchOutcome], None] | None = None,
    horizon: int = 1,
    no_feedback: NoFeedbackHistory = "kept",
    donors: Sequence[Donor] | None = None,
    seed: int = 0,
    skipped: list[str] | None = None,
    dummy_plan: bool = False,
    models_file: str | Path | None = None,
) -> list[BranchOutcome]:
    """Run ``samples`` branches per subset of ``components`` from one frozen step; return their outcomes.

    With ``donors``, ``samples`` more branches run the randomised-feedback control (seeded by ``seed``);
    a step whose attempt has no donor of its category gets none, and a line in ``skipped`` says so.
    ``dummy_plan`` (a planning protocol, ``plan`` not a player): ``samples`` more branches with every
    feedback component and the dummy plan. ``models_file``: where the protocol's planner and summariser
    are looked up."""
    unknown = [c for c in components if c not in (*FEEDBACK_COMPONENTS, PLAN)]
    if unknown:
        raise BranchError(
            f"unknown feedback component {unknown[0]!r} (known: {', '.join(FEEDBACK_COMPONENTS)}, and "
            f"{PLAN} under a planning protocol)"
        )
    feedback_of = [c for c in components if c != PLAN]
    if samples < 1:
        raise BranchError("--samples must be 1 or more")
    header, events, problem = read_session(parent_path)
    if header is None:
        raise BranchError(f"{parent_path}: {problem}")
    out = Path(out_dir)
    results: list[BranchOutcome] = []
    planned = header.protocol.model_copy(update=protocol_update or {}).planning
    if (PLAN in components or dummy_plan) and planned != "plan":
        raise BranchError(
            f"the {'plan player' if PLAN in components else 'dummy-plan control'} needs a planning protocol "
            '(planning = "plan"): the parent plans nothing'
        )
    conditions: list[tuple[Condition, frozenset[str]]] = [("coalition", s) for s in subsets(components)]
    if dummy_plan and PLAN not in components:
        conditions.append(("dummy_plan", frozenset(feedback_of)))
    if donors is not None:
        frozen = fold(header, events).attempt(step)
        category = frozen.verdict.category if frozen is not None and frozen.verdict is not None else None
        probe = RandomFeedback(donors, header.task.id, components, task.language, seed, "")
        if probe.choices(category):
            conditions.append(("random", frozenset(components)))
        elif skipped is not None:
            skipped.append(
                f"{parent_path} at step {step}: no randomised-feedback control "
                f"(no donor attempt of category {category} from another task)"
            )
    for condition, subset in conditions:
        protocol = attribution_protocol(
            header.protocol, subset - {PLAN}, step, horizon=horizon, no_feedback=no_feedback
        )
        if protocol_update:
            protocol = protocol.model_copy(update=protocol_update)
        dummy = condition == "dummy_plan" or (PLAN in components and PLAN not in subset)
        label = condition.replace("_", "-") if condition != "coalition" else _label(subset, components)
        for i in range(samples):
            name = f"{_safe(header.task.id)}-{header.session_id}-at{step}-{label}-s{i}.jsonl"
            path = out / name
            if path.exists():
                path.unlink()  # a re-run replaces its own earlier branch file
            note_for = None
            if condition == "random":
                assert donors is not None
                key = f"{header.session_id}/{step}/{i}"
                note_for = RandomFeedback(donors, header.task.id, components, task.language, seed, key)
            written: list[Event] = []
            stream = branch_session(
                parent_path,
                step,
                task,
                model_factory(),
                toolchain,
                protocol,
                sample=i,
                notes=f"attribution: feedback {label}, horizon {horizon}, sample {i}",
                parent=(header, events),
                note_for=note_for,
                planner=DummyPlanner() if dummy else None,
                models_file=models_file,
            )
            _write(path, stream, written)
            compiled_, correct, passed = outcome_over(written, step + 1, step + horizon)
            result = BranchOutcome(
                str(parent_path),
                step,
                subset,
                i,
                compiled_,
                correct,
                passed,
                path,
                condition=condition,
                donors=_sent(note_for.used, written) if note_for is not None else (),
                horizon=horizon,
            )
            results.append(result)
            if on_outcome is not None:
                on_outcome(result)
    return results


def _sent(used: Sequence[tuple[int, str]], events: Sequence[Event]) -> tuple[str, ...]:
    """The draws whose note was sent: the note on attempt i is sent with the request of attempt i + 1."""
    asked = {e.iteration for e in events if isinstance(e, Request)}
    return tuple(name for iteration, name in used if iteration + 1 in asked)


def _write(path: Path, stream: Iterator[SessionHeader | Event], sink: list[Event]) -> None:
    first = next(stream)
    assert isinstance(first, SessionHeader)
    sink.extend(record(path, first, stream))


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def games(outcomes: Sequence[BranchOutcome], measure: str) -> list[Game]:
    """One game per (parent, step): outcome values per subset, branches without a verdict left out."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}")
    by_step: dict[tuple[str, int], dict[frozenset[str], list[float]]] = {}
    for o in outcomes:
        if o.condition != "coalition":
            continue
        v = o.value(measure)
        game = by_step.setdefault((o.parent, o.step), {})
        values = game.setdefault(o.subset, [])
        if v is not None:
            values.append(v)
    return list(by_step.values())


def attribute_outcomes(
    outcomes: Sequence[BranchOutcome], components: Sequence[str], *, resamples: int = 1000, seed: int = 0
) -> dict[str, Attribution]:
    """Shapley/Banzhaf attribution of each of the three measures over every frozen step in ``outcomes``."""
    return {m: attribute(components, games(outcomes, m), resamples=resamples, seed=seed) for m in MEASURES}


def failed_steps(path: str | Path) -> list[int]:
    """The steps of a recorded session a branch can start from: judged, failed attempts with a reply."""
    header, events, _problem = read_session(path)
    if header is None or header.protocol.method != "iterative":
        return []
    state = fold(header, events)
    return [
        a.iteration
        for a in state.attempts
        if a.verdict is not None and not a.verdict.success and a.reply is not None
    ]


def controls(
    outcomes: Sequence[BranchOutcome],
    components: Sequence[str],
    measure: str,
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Estimate]:
    """The controls of one measure, beside the game: ``none`` (no feedback, the empty subset), ``random``
    (randomised feedback), ``dummy_plan`` (every feedback component with the dummy plan: the coalition
    without ``plan`` when it is a player, else its own branches), ``full`` (every component) and their
    differences (attribution.CONTRASTS)."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}")
    full = frozenset(components)
    without_plan = full - {PLAN} if PLAN in full else None
    by_step: dict[tuple[str, int], dict[str, list[float]]] = {}
    for o in outcomes:
        v = o.value(measure)
        if v is None:
            continue
        name: str
        if o.condition in ("random", "dummy_plan"):
            name = o.condition
        elif o.subset == without_plan:
            name = "dummy_plan"
        elif not o.subset:
            name = "none"
        elif o.subset == full:
            name = "full"
        else:
            continue
        by_step.setdefault((o.parent, o.step), {}).setdefault(name, []).append(v)
    return control_estimates(list(by_step.values()), resamples=resamples, seed=seed)
