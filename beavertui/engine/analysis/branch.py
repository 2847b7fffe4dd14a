"""Branching: a new session that starts from the frozen prefix of a recorded one.

Re-asking the model from the same recorded point with one thing changed (feedback level or components,
history window, model, temperature) separates the effect of that change from the drift of a whole new
run. A branch at step k keeps the parent's events of iterations 1..k verbatim (the same requests, replies,
candidates and verdicts, so the same messages), then runs the loop from iteration k + 1 under the new
protocol: the feedback on attempt k is the first thing built under it. The branch's header names its
parent and branch step, and its file holds the copied prefix, so it reads as a complete session.

This module runs the loop (run_session) but writes nothing itself; callers write the events it yields.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from beavertui import __version__
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.loop.run import helper_models, run_session
from beavertui.engine.models.base import Completion, DeltaCallback, Model
from beavertui.engine.session.events import (
    Event,
    Message,
    ModelInfo,
    ReplyDelta,
    SessionEnd,
    SessionHeader,
    Stalled,
    TaskRef,
)
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.state import AttemptState, fold
from beavertui.engine.session.store import load_session, read_session
from beavertui.engine.toolchain.base import Toolchain


class BranchError(BeaverError):
    """A branch cannot start from the requested step."""


class FreshModel:
    """A model for the new part of a branch: its calls are not skipped as a resumed session's would be."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    def info(self) -> ModelInfo:
        return self.inner.info()

    @property
    def replaces(self) -> str | None:
        """What a control model's answers stand in for (attribution's dummy planner), else None."""
        return getattr(self.inner, "replaces", None)

    def secrets(self) -> tuple[str, ...]:
        return self.inner.secrets()

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        return self.inner.complete(messages, on_delta=on_delta)


def frozen_prefix(header: SessionHeader, events: Sequence[Event], step: int) -> list[Event]:
    """The parent's events of iterations 1..step, checked to end with a judged, failed attempt.

    Stagnation events of the branch step itself are left out: the branch's own detectors decide.
    """
    if step < 1:
        raise BranchError("the branch step must be 1 or more (the iteration after which the branch starts)")
    if header.protocol.method != "iterative":
        raise BranchError(
            "the parent ran the repeated protocol: its samples share no conversation to branch from"
        )
    prefix: list[Event] = [
        e
        for e in events
        if not isinstance(e, SessionEnd | ReplyDelta)
        and getattr(e, "iteration", step + 1) <= step
        and not (isinstance(e, Stalled) and e.iteration == step)
    ]
    state = fold(header, prefix)
    attempt = state.attempt(step)
    if attempt is None or attempt.verdict is None:
        last = max((a.iteration for a in state.attempts if a.verdict is not None), default=0)
        raise BranchError(f"step {step} has no verdict in the parent (its last judged step is {last})")
    if attempt.reply is None:
        raise BranchError(f"step {step} has no recorded reply to continue from")
    if attempt.verdict.success:
        raise BranchError(f"step {step} already passed; branch from an earlier, failed step")
    return prefix


def branch_header(
    parent: SessionHeader,
    parent_path: str | Path,
    step: int,
    model: ModelInfo,
    protocol: Protocol,
    toolchain: Toolchain,
    *,
    task: TaskRef | None = None,
    run_id: str | None = None,
    sample: int = 0,
    notes: str | None = None,
    planner: ModelInfo | None = None,
    summariser: ModelInfo | None = None,
) -> SessionHeader:
    """The header of a branch: a new session id, the new protocol and model, the parent and branch step (and
    the parent's named baselines, for the same task on the same GPU)."""
    gpu = toolchain.gpu()
    same = task is None and gpu is not None and parent.gpu is not None and gpu.slug == parent.gpu.slug
    return SessionHeader(
        session_id=uuid.uuid4().hex[:12],
        tool_version=__version__,
        task=task or parent.task,
        model=model,
        protocol=protocol,
        baselines=parent.baselines if same else [],
        gpu=gpu,
        run_id=run_id,
        sample=sample,
        parent=str(parent_path),
        branch_step=step,
        notes=notes,
        planner=planner,
        summariser=summariser,
    )


def branch_session(
    parent_path: str | Path,
    step: int,
    task: Task,
    model: Model,
    toolchain: Toolchain,
    protocol: Protocol,
    *,
    run_id: str | None = None,
    sample: int = 0,
    notes: str | None = None,
    parent: tuple[SessionHeader, Sequence[Event]] | None = None,
    note_for: Callable[[AttemptState, str], str] | None = None,
    planner: Model | None = None,
    summariser: Model | None = None,
    models_file: str | Path | None = None,
) -> Iterator[SessionHeader | Event]:
    """Yield the branch's header, the copied prefix, then every new event up to one SessionEnd.

    ``parent`` may pass the parent's header and events already read (many branches of one parent);
    ``note_for`` replaces the feedback notes built from the branch step on (run_session). ``planner`` and
    ``summariser``: the helper models the protocol calls (None: as run_session builds them); like the
    coding model, they start afresh (a scripted one from its first reply).
    """
    header, events = parent if parent is not None else _read_parent(parent_path)
    if header.task.id != task.id:
        raise BranchError(f"the parent session is of task {header.task.id!r}, not {task.id!r}")
    if protocol.method != "iterative":
        raise BranchError("a branch continues a conversation: its protocol must be iterative")
    prefix = frozen_prefix(header, events, step)
    if protocol.budget <= step:
        raise BranchError(f"the branch's budget K={protocol.budget} leaves no iteration after step {step}")
    fresh = FreshModel(model)
    plans, summaries = helper_models(task, fresh, protocol, planner, summariser, models_file)
    plans = plans if plans is None or plans is fresh else FreshModel(plans)
    summaries = summaries if summaries is None or summaries is fresh else FreshModel(summaries)
    new = branch_header(
        header,
        parent_path,
        step,
        model.info(),
        protocol,
        toolchain,
        run_id=run_id,
        sample=sample,
        notes=notes,
        planner=plans.info() if plans is not None else None,
        summariser=summaries.info() if summaries is not None else None,
    )
    yield new
    yield from prefix
    for item in run_session(
        task,
        fresh,
        toolchain,
        protocol,
        resume_from=(new, prefix),
        note_for=note_for,
        planner=plans,
        summariser=summaries,
    ):
        if not isinstance(item, SessionHeader):
            yield item


def _read_parent(path: str | Path) -> tuple[SessionHeader, list[Event]]:
    header, events, problem = read_session(path)
    if header is None:
        load_session(path)  # raises the reader's message
        raise BranchError(f"{path}: {problem}")
    return header, events
