"""The browser's rows: a one-line summary of each session file, read lazily from its header and tail.

Reading 10,000 sessions whole would take seconds and gigabytes; a row needs only the header (task, model,
protocol) and the last lines (how it ended, the last category), which engine.session.peek reads by
seeking; the hot path below reads the same two places with plain json. Rows keep plain strings and numbers, never the header's source texts. No widgets here.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_CATEGORY = re.compile(rb'"kind":\s*"verdict".*?"category":\s*"([a-z_]+)"')
TAIL_BYTES = 8192
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
            if field == "stop" and value not in self.stop:
                return False
            if field == "" and value not in self.haystack:
                return False
        return True

    @property
    def haystack(self) -> str:
        return f"{self.task} {self.model} {self.protocol} {self.outcome} {self.stop} {self.category}".lower()


def parse_filter(text: str) -> list[tuple[str, str]]:
    """``outcome:success model:gpt gemm`` -> [("outcome","success"), ("model","gpt"), ("","gemm")]."""
    tokens = []
    for word in text.lower().split():
        field, sep, value = word.partition(":")
        tokens.append((field, value) if sep else ("", word))
    return tokens


def is_session_file(path: Path) -> bool:
    """A ``*.jsonl`` that is a session: not the infrastructure log beside a batch run's run.json."""
    from beavertui.batch.rundir import INFRA_LOG, MANIFEST

    if not path.name.endswith(".jsonl"):
        return False
    return path.name != INFRA_LOG or not (path.parent / MANIFEST).is_file()


def session_files(root: Path) -> Iterator[Path]:
    """Every session ``*.jsonl`` under a run folder (sessions/<run>/<task>.jsonl nests one level or more)."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.name.endswith(".jsonl") and is_session_file(Path(entry.path)):
                yield Path(entry.path)


_ITERATION = re.compile(rb'"iteration":\s*(\d+)')


@lru_cache(maxsize=256)
def _protocol_label(raw: str) -> tuple[str, int]:
    import json

    from beavertui.engine.session.protocol import Protocol, with_legacy_gate

    try:
        p = Protocol.model_validate(with_legacy_gate(json.loads(raw)))
    except ValueError:
        return "?", 0
    return p.short(), p.budget


def read_row(path: Path) -> Row:
    """A row from the header line and the tail of one session file.

    This is the browser's hot path (10,000 files): it reads the same lines as engine.session.peek but
    decodes only the fields a row shows, with json instead of full model validation.
    """
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
            size = os.fstat(fh.fileno()).st_size
            mtime = os.fstat(fh.fileno()).st_mtime
            fh.seek(max(len(first), size - TAIL_BYTES))
            tail = fh.read()
    except OSError as exc:
        return Row(
            str(path), path.stem, "?", "?", "damaged", 0, 0, None, exc.strerror or "unreadable", "", 0.0
        )
    try:
        h = json.loads(first)
        if h.get("kind") != "header":
            raise ValueError("line 1 is not a session header")
        task, model = str(h["task"]["id"]), str(h["model"]["name"])
        label, budget = _protocol_label(json.dumps(h.get("protocol", {})))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        why = "no header" if not first.endswith(b"\n") else f"bad header ({exc.__class__.__name__})"
        return Row(str(path), path.stem, "?", "?", "damaged", 0, 0, None, why, "", mtime)
    lines = tail.split(b"\n")
    partial = lines.pop()  # '' when the file ends with a newline
    complete = [line for line in lines if line.strip()]
    if len(tail) + len(first) < size and complete:
        complete = complete[1:]  # the window may start mid-line
    last: dict[str, object] | None = None
    problem = None
    if complete:
        try:
            last = json.loads(complete[-1])
        except ValueError:
            problem = "damaged last line"
    iters = _ITERATION.findall(tail)
    iteration = int(iters[-1]) if iters else 0
    found = _CATEGORY.findall(tail)
    category = found[-1].decode() if found else ""
    if isinstance(last, dict) and last.get("kind") == "end":
        best = last.get("best_speedup")
        return Row(
            str(path),
            task,
            model,
            label,
            "success" if last.get("success") else "failed",
            int(str(last.get("iterations") or iteration)),
            budget,
            float(best) if isinstance(best, int | float) else None,
            str(last.get("stop_reason")),
            category,
            mtime,
        )
    if problem:
        return Row(
            str(path), task, model, label, "damaged", iteration, budget, None, problem, category, mtime
        )
    # No end line: still being written, or its writer died (no change for a while).
    recent = time.time() - mtime < STALE_S
    outcome = "running" if recent else "incomplete"
    stop = "running" if recent else ("cut mid-line" if partial else "no end line")
    return Row(str(path), task, model, label, outcome, iteration, budget, None, stop, category, mtime)
