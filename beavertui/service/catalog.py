"""One line per session file: the rows the browser lists and the batch summary counts.

A row is read by the same session reader as ``replay`` and ``metrics`` (engine.session.store), so the
three never disagree about a file: one that replay cuts short is listed as damaged, with the reader's
reason. The browser reads rows in a worker thread after its first frame. Rows keep plain strings and
numbers, never the header's source texts. No widgets here.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.session.store import is_session_file, session_files

__all__ = ["Row", "is_session_file", "parse_filter", "read_row", "session_files"]

STALE_S = 300.0
"""A session with no end line and no change for this long is listed as incomplete, not running."""


@dataclass(frozen=True)
class Row:
    """One session as the browser lists it."""

    path: str
    task: str
    model: str
    protocol: str
    outcome: str
    """success, failed, running, incomplete (no end line, writer gone) or damaged."""
    iterations: int
    budget: int
    best: float | None
    stop: str
    category: str
    """Category of the last classified attempt ('' if none yet)."""
    mtime: float
    problem: str | None = None
    """What the session reader found wrong with the file (damaged rows), in full."""
    tokens: int | None = None
    """Prompt and completion tokens of the whole session (from its end line; None: not reported)."""
    cost: float | None = None
    """Dollars at the model's prices (None: no prices)."""
    cached: int = 0
    """Replies served by the reply cache."""
    below_gate: bool = False
    """The last classified attempt was correct but slower than the gate (a failure, shown as one)."""
    judged: int = 0
    """Attempts with a verdict (``iterations`` is the iteration reached: an attempt an infrastructure failure
    cut counts there, not here)."""
    identity: str = ""
    """The model as ``metrics`` names it (engine.session.events.model_identity: its models-file entry and the
    request settings that make it another model); '' where the file is damaged before its header."""
    timing_pending: bool = False
    """The last classified attempt is correct and waits for the batch's timing lane: neither passed nor
    below the gate yet."""

    def matches(self, tokens: list[tuple[str, str]]) -> bool:
        """Whether every filter token matches (``field:value`` substrings, or free text anywhere)."""
        for field, value in tokens:
            if field == "outcome" and value not in self.outcome:
                return False
            if field in ("category", "cat") and value not in self.category:
                return False
            if field == "model" and value not in self.model.lower():
                return False
            if field == "task" and value not in self.task.lower():
                return False
            if field == "file" and value not in os.path.basename(self.path).lower():
                return False
            if field == "stop" and value not in self.stop:
                return False
            if field == "protocol" and value not in self.protocol.lower():
                return False
            if field == "" and value not in self.haystack:
                return False
        return True

    @property
    def haystack(self) -> str:
        return f"{self.task} {self.model} {self.protocol} {self.outcome} {self.stop} {self.category}".lower()


#: The ``field:`` names the filter knows (``cat`` is short for ``category``).
FILTER_KEYS = ("outcome", "category", "cat", "model", "task", "protocol", "stop", "file")


def unknown_keys(tokens: list[tuple[str, str]]) -> list[str]:
    """The ``field:`` names of a parsed filter that the filter does not know, in order, once each."""
    return list(dict.fromkeys(f for f, _ in tokens if f and f not in FILTER_KEYS))


def parse_filter(text: str) -> list[tuple[str, str]]:
    """``outcome:success model:gpt gemm`` -> [("outcome","success"), ("model","gpt"), ("","gemm")]."""
    tokens = []
    for word in text.lower().split():
        field, sep, value = word.partition(":")
        tokens.append((field, value) if sep else ("", word))
    return tokens


def short_problem(problem: str) -> str:
    """A reader's problem in a few words for the stop column (the full text is in ``Row.problem``)."""
    m = re.search(r"line (\d+)", problem)
    if problem.startswith("unknown format version"):
        return "unknown format"
    if "line 1" in problem or "header" in problem:
        return "bad header"
    if problem.startswith("truncated last line"):
        return "cut mid-line"
    if m:
        return f"bad line {m.group(1)}"
    return problem[:14]


def _usage(doc: object) -> tuple[int | None, float | None, int]:
    """(tokens, cost, replies from the cache) of an end line's usage object."""
    if not isinstance(doc, dict):
        return None, None, 0
    replies, unreported = doc.get("replies") or 0, doc.get("unreported") or 0
    tokens = None
    if isinstance(replies, int) and isinstance(unreported, int) and replies > unreported:
        tokens = int(doc.get("prompt_tokens") or 0) + int(doc.get("completion_tokens") or 0)
    cost = doc.get("cost_usd")
    cached = doc.get("cached") or 0
    return tokens, float(cost) if isinstance(cost, int | float) else None, int(cached)


def read_row(path: Path) -> Row:
    """A row of one session file, read by the session reader that ``replay`` and ``metrics`` use.

    The whole file is validated, so a file is listed as it replays: a damaged one as damaged, with the
    reader's problem, and its counts from the same valid prefix the other commands see.
    """
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.fileio import why_oserror
    from beavertui.engine.session.describe import stop_text
    from beavertui.engine.session.events import SessionEnd, Verdict, model_identity
    from beavertui.engine.session.store import read_session

    mtime = 0.0
    try:
        mtime = os.stat(path).st_mtime
        header, events, problem = read_session(path)
    except (BeaverError, OSError) as exc:
        why = str(exc).removeprefix(f"{path}: ") if isinstance(exc, BeaverError) else why_oserror(exc)
        return Row(str(path), path.stem, "?", "?", "damaged", 0, 0, None, short_problem(why), "", mtime, why)
    if header is None:
        why = problem or "no header"
        return Row(str(path), path.stem, "?", "?", "damaged", 0, 0, None, short_problem(why), "", mtime, why)
    task, model, identity = header.task.id, header.model.name, model_identity(header.model)
    label, budget = header.protocol.short(), header.protocol.budget
    iteration = max((i for e in events if isinstance(i := getattr(e, "iteration", None), int)), default=0)
    verdict = next((e for e in reversed(events) if isinstance(e, Verdict)), None)
    judged = len({e.iteration for e in events if isinstance(e, Verdict)})  # a late timing's verdict: the same
    category = verdict.category if verdict is not None else ""
    waiting = verdict is not None and verdict.timing_pending
    below = verdict is not None and verdict.correct and not verdict.success and not waiting
    last = events[-1] if events else None
    torn = problem is not None and problem.startswith("truncated last line")
    if problem is not None and not (torn and not isinstance(last, SessionEnd)):
        return Row(
            str(path), task, model, label, "damaged", iteration, budget, None,
            short_problem(problem), category, mtime, problem, identity=identity,
        )  # fmt: skip
    if isinstance(last, SessionEnd):
        from beavertui.engine.session.usage import session_usage

        whole = session_usage(last)
        tokens, cost, cached = _usage(whole.model_dump() if whole is not None else None)
        return Row(
            str(path), task, model, label, "success" if last.success else "failed",
            last.iterations or iteration, budget, last.best_speedup,
            stop_text(last.stop_reason, last.success, last.timing_pending), category, mtime,
            None, tokens, cost, cached, below, judged, identity, waiting,
        )  # fmt: skip
    # No end line: still being written, or its writer died (no change for a while).
    recent = time.time() - mtime < STALE_S
    outcome = "running" if recent else "incomplete"
    stop = "running" if recent else ("cut mid-line" if torn else "no end line")
    return Row(
        str(path), task, model, label, outcome, iteration, budget, None, stop, category, mtime,
        below_gate=below, judged=judged, identity=identity, timing_pending=waiting,
    )  # fmt: skip
