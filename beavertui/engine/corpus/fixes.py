"""Which minimal fixes are scoring targets: the corpus's verification record (``minimal_fixes.json``).

A task's ``minimal_fix.patch`` is a target for edit precision and bug recall only when the record at the
corpus root marks it verified: the fixed kernel was measured correct and at least ``gate`` times the
reference's speed on the GPU the record names. A task without a patch, or whose patch is below the gate,
has no target; its repairs are unscored (never scored against the reference instead).

``target_for`` resolves a session's task (a TaskRef) to its target: the patch is applied to the session's
own broken start, so a fix written for another version of the task is no target either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from beavertui.engine.corpus import patch

RECORD = "minimal_fixes.json"
"""The verification record, at the corpus root."""
PATCH = "minimal_fix.patch"


@dataclass(frozen=True)
class FixTarget:
    """A task's scoring target: the fixed source, or why there is none."""

    source: str | None
    """The broken start with the verified minimal fix applied; None when unscored."""
    reason: str | None = None
    """Why there is no target (None when there is one)."""


def record(corpus_root: Path) -> dict[str, dict[str, object]]:
    """The record's per-task entries ({} when the corpus ships no record or it cannot be read)."""
    return _record(str(corpus_root))


@lru_cache(maxsize=16)
def _record(root: str) -> dict[str, dict[str, object]]:
    try:
        doc = json.loads((Path(root) / RECORD).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    return {k: v for k, v in tasks.items() if isinstance(v, dict)} if isinstance(tasks, dict) else {}


def target(corpus_root: Path, task_id: str, broken_start: str) -> FixTarget:
    """The verified minimal fix of ``task_id`` applied to ``broken_start``, or why there is none."""
    p = corpus_root / task_id / PATCH
    if not p.is_file():
        return FixTarget(None, "no minimal fix shipped")
    entry = record(corpus_root).get(task_id)
    if entry is None:
        return FixTarget(None, "minimal fix not verified (no record)")
    if entry.get("verified") is not True:
        return FixTarget(None, f"minimal fix not verified ({entry.get('why', 'no reason given')})")
    try:
        return FixTarget(patch.apply(broken_start, p.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, patch.PatchError):
        return FixTarget(None, "minimal fix does not apply to this broken start")


@lru_cache(maxsize=256)
def _target_for(corpus: str, task_id: str, broken_start: str) -> FixTarget:
    from beavertui.engine import bundled

    candidates = [Path(corpus)] if corpus else []
    candidates.append(bundled.corpus())  # a session recorded elsewhere: the task as bundled here
    for root in candidates:
        if (root / task_id).is_dir():
            return target(root, task_id, broken_start)
    return FixTarget(None, "task not found in its corpus")


def target_for(corpus: str, task_id: str, broken_start: str) -> FixTarget:
    """``target`` for a session's task: its recorded corpus root, else the bundled corpus."""
    return _target_for(corpus, task_id, broken_start)
