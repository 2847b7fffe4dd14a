"""Which minimal fixes are scoring targets: the corpus's verification record (``minimal_fixes.json``).

A task's ``minimal_fix.patch`` is a target for edit precision and bug recall only when the record at the
corpus root marks it verified: the fixed kernel was measured correct and at least ``gate`` times the
reference's speed on the GPU the record names. A task without a patch, or whose patch is below the gate,
has no target; its repairs are unscored (never scored against the reference instead).

``target_for`` resolves a session's task (a TaskRef) to its target: the patch is applied to the session's
own broken start, so a fix written for another version of the task is no target either.

A corpus that ships no fixes (the CUDABeaver release) has them in **stores**, one folder per GPU signature
laid out as a corpus keeps its own (``<store>/<gpu>/minimal_fixes.json``, ``<store>/<gpu>/<task>/minimal_fix.patch``),
written by ``beavertui corpus minimize`` (engine/validation/minimal_fixes.py): this machine's
(``<cache>/minimal_fixes``), then the package's (``corpus/known/fixes``). A task of such a corpus takes the
first verified fix a store holds for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from beavertui.engine.fileio import parse_json
from beavertui.engine.corpus import patch
from beavertui.engine.paths import cache_dir

RECORD = "minimal_fixes.json"
"""The verification record, at the corpus root."""
PATCH = "minimal_fix.patch"
KNOWN_FIXES = Path(__file__).resolve().parent / "known" / "fixes"
"""The package's store of minimal fixes found for the release, one folder per GPU signature."""


def store_roots() -> list[Path]:
    """Where stored minimal fixes are looked for: this machine's store, then the package's."""
    return [cache_dir() / "minimal_fixes", KNOWN_FIXES]


def stores(*more: Path) -> list[Path]:
    """Every GPU signature's folder of the stores, this machine's first, each store's by name; then those of
    the stores ``more`` that are none of these."""
    out: list[Path] = []
    for root in dict.fromkeys([*store_roots(), *more]):
        try:
            out += sorted(p for p in root.iterdir() if (p / RECORD).is_file())
        except OSError:
            continue
    return out


def clear_caches() -> None:
    """Forget records and targets read so far (a store was written in this process)."""
    _record.cache_clear()
    _target_for.cache_clear()


@dataclass(frozen=True)
class FixTarget:
    """A task's scoring target: the fixed source, or why there is none."""

    source: str | None
    """The broken start with the verified minimal fix applied; None when unscored."""
    reason: str | None = None
    """Why there is no target (None when there is one)."""
    origin: str | None = None
    """Where the verified fix comes from (its record and the GPU that verified it), where there is one."""


def record(corpus_root: Path) -> dict[str, dict[str, object]]:
    """The record's per-task entries ({} when the corpus ships no record or it cannot be read)."""
    return _record(str(corpus_root))


@lru_cache(maxsize=16)
def _record(root: str) -> dict[str, dict[str, object]]:
    try:
        doc = parse_json((Path(root) / RECORD).read_text(encoding="utf-8"))
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
        return FixTarget(patch.apply(broken_start, p.read_text(encoding="utf-8")), origin=_origin(corpus_root, entry))
    except (OSError, UnicodeDecodeError, patch.PatchError):
        return FixTarget(None, "minimal fix does not apply to this broken start")


def _origin(root: Path, entry: dict[str, object]) -> str:
    """In words, where a verified fix comes from: a store's GPU folder (the package's, or another), or a
    corpus's own record, with the GPU its entry names."""
    if (root / RECORD).is_file() and root.parent in (KNOWN_FIXES, *(r for r in store_roots())):
        which = "the package's store" if root.parent == KNOWN_FIXES else f"the store {root.parent}"
        return f"verified on {root.name} ({which})"
    gpu = entry.get("gpu")
    return f"verified on {gpu} (the corpus's record)" if gpu else "the corpus's record"


@lru_cache(maxsize=256)
def _target_for(corpus: str, task_id: str, broken_start: str) -> FixTarget:
    from beavertui.engine import bundled

    candidates = [Path(corpus)] if corpus else []
    candidates.append(bundled.corpus())  # a session recorded elsewhere: the task as bundled here
    found: FixTarget | None = None
    for root in candidates:
        if (root / task_id).is_dir():
            found = target(root, task_id, broken_start)
            if (root / task_id / PATCH).is_file() or (root / RECORD).is_file():
                return found  # a corpus that keeps its own fixes
            break
    stored = stored_target(task_id, broken_start)
    if stored is None and found is not None:  # the task is here, in a corpus that keeps no fixes
        return FixTarget(None, "no minimal fix shipped or stored (beavertui corpus minimize searches one)")
    return stored or found or FixTarget(None, "task not found in its corpus")


def stored_target(task_id: str, broken_start: str) -> FixTarget | None:
    """The first verified fix of ``task_id`` in the stores that applies to ``broken_start``; else why the
    first store that knows the task has none; None when no store knows it."""
    first: FixTarget | None = None
    for folder in stores():
        entry = record(folder).get(task_id)
        if entry is None:
            continue
        if entry.get("verified") is True:
            found = target(folder, task_id, broken_start)
            if found.source is not None:
                return found
            why = found.reason
        else:
            why = f"no verified minimal fix ({entry.get('why', 'no reason given')})"
        first = first or FixTarget(None, f"{why} on {folder.name}")
    return first


def target_for(corpus: str, task_id: str, broken_start: str) -> FixTarget:
    """``target`` for a session's task: its recorded corpus root, else the bundled corpus."""
    return _target_for(corpus, task_id, broken_start)
