"""Feedback attribution runs: branches from frozen steps with every subset of the feedback components.

For a frozen step k of a recorded session and components C, every subset S of C gets N branches whose
protocol sends only the components in S (``Protocol.feedback_components``, at level L3, or L4 when
``profile`` is among them), whose stagnation detectors do not stop it, and whose budget ends at
iteration k + 1: the outcome of a branch is its one new attempt, so the only thing that differs between
subsets is the feedback on attempt k. Outcomes are
compiled (the attempt got past the build-stage categories), correct (the harness passed) and passed
(correct and at the gate). attribution.py turns them into Shapley and Banzhaf values.

Each branch is written as a session file under the output folder. Branches hit by an infrastructure
failure have no outcome and are left out (and counted). Must not render anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.analysis.attribution import MEASURES, Attribution, Game, attribute, subsets
from beavertui.engine.analysis.branch import BranchError, branch_session
from beavertui.engine.corpus.task import Task
from beavertui.engine.judge.classify import compiled
from beavertui.engine.models.base import Model
from beavertui.engine.session.events import Event, SessionHeader, Verdict
from beavertui.engine.session.protocol import FEEDBACK_COMPONENTS, Protocol
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import read_session, record
from beavertui.engine.toolchain.base import Toolchain


@dataclass(frozen=True)
class BranchOutcome:
    """What one attribution branch's new attempt achieved."""

    parent: str
    """Parent session path."""
    step: int
    """The frozen step."""
    subset: frozenset[str]
    """Feedback components the branch was given."""
    sample: int
    compiled: bool | None
    """None when an infrastructure failure left the attempt without a verdict."""
    correct: bool | None
    passed: bool | None
    path: Path | None
    """The branch's session file."""

    def value(self, measure: str) -> float | None:
        v = getattr(self, measure)
        return None if v is None else float(v)


def attribution_protocol(parent: Protocol, subset: frozenset[str], step: int) -> Protocol:
    """The parent's protocol with only ``subset`` in the feedback and one attempt after ``step``."""
    return parent.model_copy(
        update={
            "method": "iterative",
            "feedback": "L4" if "profile" in subset else "L3",
            "feedback_components": tuple(c for c in FEEDBACK_COMPONENTS if c in subset),
            "budget": step + 1,
            "continue_after_pass": False,
            # The frozen prefix may already trip a detector; the one new attempt must run regardless.
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


def _label(subset: frozenset[str], components: Sequence[str]) -> str:
    return "+".join(c for c in components if c in subset) or "none"


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
) -> list[BranchOutcome]:
    """Run ``samples`` branches per subset of ``components`` from one frozen step; return their outcomes."""
    unknown = [c for c in components if c not in FEEDBACK_COMPONENTS]
    if unknown:
        raise BranchError(
            f"unknown feedback component {unknown[0]!r} (known: {', '.join(FEEDBACK_COMPONENTS)})"
        )
    if samples < 1:
        raise BranchError("--samples must be 1 or more")
    header, events, problem = read_session(parent_path)
    if header is None:
        raise BranchError(f"{parent_path}: {problem}")
    out = Path(out_dir)
    results: list[BranchOutcome] = []
    for subset in subsets(components):
        protocol = attribution_protocol(header.protocol, subset, step)
        if protocol_update:
            protocol = protocol.model_copy(update=protocol_update)
        for i in range(samples):
            name = f"{_safe(header.task.id)}-{header.session_id}-at{step}-{_label(subset, components)}-s{i}.jsonl"
            path = out / name
            if path.exists():
                path.unlink()  # a re-run replaces its own earlier branch file
            written: list[Event] = []
            stream = branch_session(
                parent_path,
                step,
                task,
                model_factory(),
                toolchain,
                protocol,
                sample=i,
                notes=f"attribution: feedback {_label(subset, components)}, sample {i}",
                parent=(header, events),
            )
            _write(path, stream, written)
            got = outcome_of(written, step + 1)
            compiled, correct, passed = got if got is not None else (None, None, None)
            result = BranchOutcome(str(parent_path), step, subset, i, compiled, correct, passed, path)
            results.append(result)
            if on_outcome is not None:
                on_outcome(result)
    return results


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
