"""Branches of a recorded session: the protocol, task, model and toolchain of a branch, and running one.

``branch`` (the command), ``attribute`` and the TUI's branch form all build a branch from ``BranchOptions``
here, so a branch asked for in any of them is the same branch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.models.base import Model
from beavertui.engine.session.events import Event, SessionHeader
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.toolchain.base import Toolchain
from beavertui.service.flag_errors import protocol_error

Feedback = Literal["L0", "L1", "L2", "L3", "L3S", "L3_raw", "L4"]


@dataclass(frozen=True)
class BranchOptions:
    """What a branch changes and where its parts come from; None keeps the parent's."""

    feedback: str | None = None
    planning: str | None = None
    """``implicit`` or ``plan`` from the branch step on (protocol ``planning``)."""
    planner: str | None = None
    coder_feedback: bool | None = None
    summariser: str | None = None
    history: int | None = None
    temperature: float | None = None
    budget: int | None = None
    model: str | None = None
    """Model name as ``engine/models/resolve.py`` reads it; None: the parent's endpoint model."""
    models: str | None = None
    """Models file; None: ``$BEAVERTUI_MODELS`` or the user's default one."""
    base_url: str | None = None
    corpus: str | None = None
    recorded: str | None = None
    """Judge with recorded outcomes (a recordings file, a session file or a folder) instead of the GPU."""
    endpoint: dict[str, Any] = field(default_factory=dict)
    """Endpoint fields given on the command line (OpenAIConfig names: top_p, timeout_s, ...)."""


def protocol_of(header: SessionHeader, options: BranchOptions) -> Protocol:
    """The parent's protocol, iterative, with the options' changes."""
    from pydantic import ValidationError

    if options.feedback is not None and options.feedback not in get_args(Feedback):
        raise BeaverError(f"feedback: {options.feedback!r} is not one of L0..L4, L3S or L3_raw")
    update: dict[str, object] = {"method": "iterative"}
    if options.planning == "implicit":  # the parent's planner and coder settings go with its planning
        update.update(planner=None, coder_feedback=True)
    if options.feedback is not None and options.feedback != "L3S":
        update["summariser"] = None
    for key in (
        "feedback",
        "planning",
        "planner",
        "coder_feedback",
        "summariser",
        "history",
        "temperature",
        "budget",
    ):
        value = getattr(options, key)
        if value is not None:
            update[key] = value
    try:
        return header.protocol.model_validate({**header.protocol.model_dump(), **update})
    except ValidationError as exc:
        raise protocol_error(exc) from None


def task_of(header: SessionHeader, corpus: str | None) -> Task:
    """The parent's task, from ``corpus`` or the corpus the parent recorded; the same broken start."""
    from beavertui.engine.corpus.load import load_corpus

    root = Path(corpus or header.task.corpus)
    if not root.is_dir():
        raise BeaverError(f"corpus {root} (recorded in the session) is not here; give --corpus DIR")
    task = load_corpus(root, only=[header.task.id]).get(header.task.id)
    if task.ref().broken_start_hash != header.task.broken_start_hash and header.task.broken_start_hash:
        raise BeaverError(f"task {task.id} in {root} has another broken start than the parent session used")
    return task


def model_of(header: SessionHeader, options: BranchOptions, protocol: Protocol, task: Task) -> Model:
    """The model a branch asks: the options' one, else the parent's endpoint model."""
    from beavertui.engine.models.resolve import build_model

    name = options.model
    if name is None:
        if header.model.kind != "openai":
            raise BeaverError(
                f"the parent's model was {header.model.kind} ({header.model.name}); give --model"
            )
        name = header.model.name
        base_url = options.base_url or header.model.base_url
    else:
        base_url = options.base_url
    overrides = {**options.endpoint, "base_url": base_url}
    return build_model(name, task, protocol, models=options.models, overrides=overrides)


def toolchain_of(options: BranchOptions) -> Toolchain:
    from beavertui.engine.toolchain.resolve import build_toolchain
    from beavertui.service.environment import local_config

    if options.recorded:
        return build_toolchain(f"recorded:{options.recorded}")
    return build_toolchain("local", config=local_config())


@dataclass
class Branch:
    """A branch about to run: its header, its file, and the stream of its events (recorded as they come)."""

    header: SessionHeader
    path: Path
    protocol: Protocol
    events: Iterator[Event]


def start_branch(parent: Path, step: int, options: BranchOptions, out: Path | None = None) -> Branch:
    """Open a branch of ``parent`` after ``step``; iterating ``events`` runs it and writes ``path``."""
    from beavertui.engine.analysis.branch import branch_session
    from beavertui.engine.session.store import load_session, record

    header, events = load_session(parent)
    if out is not None and out.exists():  # said before the branch starts, not after its first line
        raise BeaverError(
            f"--out {out}: already exists, and a session file is never written over: give another path"
        )
    protocol = protocol_of(header, options)
    task = task_of(header, options.corpus)
    model = model_of(header, options, protocol, task)
    toolchain = toolchain_of(options)
    stream = branch_session(
        parent, step, task, model, toolchain, protocol, parent=(header, events), models_file=options.models
    )
    first = next(stream)
    if not isinstance(first, SessionHeader):  # pragma: no cover - the loop's contract
        raise TypeError("branch_session must yield the header first")
    path = out or Path("sessions") / "branches" / f"{task.id}-{first.session_id}.jsonl"
    return Branch(first, path, protocol, record(path, first, stream, redact=model.secrets()))
