"""Validation verdicts kept per GPU signature, and the task selection of runs that follows from them.

``corpus validate`` stores one record per task under ``<cache>/validation/<gpu slug>/<task id>.json``: the
verdict (usable, usable with a corrected label, unusable), its reason, the observed category, the
reference time and method. A record holds only while the task's reference and harness are unchanged.
``batch`` and ``live`` run usable tasks by default: ``select`` says which tasks are skipped and why, and
which were never validated on this GPU (those still run). Nothing here builds or runs anything.

The package ships known sets (``known/<gpu slug>.json``): the CUDABeaver release's verdicts as validated on
that GPU and toolkit, with each reference's measured run time. A task with no record in the cache takes its
record from the known set, under the same hash checks, so a fresh machine of a known kind needs no
validation run before a batch (``scripts/release_known_set.py`` makes the file, from any stored verdicts of
a GPU). A set may be partial (the H100's holds what one batch there checked): a task it lacks has no record,
and a batch validates it on the run as on any GPU (validation/on_the_run.py).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beavertui.engine.fileio import parse_json, write_atomic
from beavertui.engine.corpus.task import Task
from beavertui.engine.paths import cache_dir


class VerdictRecord(BaseModel):
    """One task's validation on one GPU and toolkit."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    gpu: str
    """GPU signature slug."""
    verdict: str
    """usable, usable_relabelled or unusable."""
    reason: str
    label: str
    """The label as shipped."""
    observed_category: str | None = None
    """The broken start's category here (the corrected label when relabelled)."""
    evidence: str | None = None
    """The broken start's error signature."""
    family: str = ""
    reference_kind: str = "drop_in"
    reference_ms: float | None = None
    method: str | None = None
    notes: list[str] = Field(default_factory=list)
    reference_hash: str = ""
    harness_hash: str = ""
    broken_hash: str = ""
    """SHA-256 of the broken start the verdict saw (empty in records stored before it was kept)."""
    measured_at: float = Field(default_factory=time.time)
    reference_run_s: float | None = Field(default=None, ge=0)
    """Wall seconds of the reference's correctness run (its test command) on this GPU, the largest of those
    measured; None where no run of it was kept. A run's time limit follows from it (``run_limit``)."""
    known: bool = False
    """Taken from the package's known set, not from this machine's cache."""


def _hashes(task: Task) -> tuple[str, str]:
    from beavertui.engine.corpus.harness import harness_hash, reference_hash

    return reference_hash(task), harness_hash(task)


def _broken_hash(task: Task) -> str:
    import hashlib

    return hashlib.sha256(task.broken_start().encode()).hexdigest()


def folder(gpu: str, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "validation" / gpu


def save(task: Task, record: VerdictRecord, cache: Path | None = None) -> Path:
    ref, harness = _hashes(task)
    rec = record.model_copy(
        update={"reference_hash": ref, "harness_hash": harness, "broken_hash": _broken_hash(task)}
    )
    p = folder(rec.gpu, cache) / f"{task.id}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, rec.model_dump_json(indent=2) + "\n")
    return p


KNOWN = Path(__file__).resolve().parent / "known"
"""The package's known sets: one JSON list of VerdictRecords per GPU signature slug."""


@functools.cache
def known_set(gpu: str) -> dict[str, VerdictRecord]:
    """The package's known verdicts on ``gpu`` by task id (empty for a GPU with no known set; only some
    tasks for a partial one)."""
    try:
        docs = parse_json((KNOWN / f"{gpu}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out = {}
    for doc in docs if isinstance(docs, list) else []:
        try:
            rec = VerdictRecord.model_validate({**doc, "known": True})
        except ValidationError:
            continue
        if rec.gpu == gpu:
            out[rec.task_id] = rec
    return out


def load(task: Task, gpu: str, cache: Path | None = None, known: bool = True) -> VerdictRecord | None:
    """The stored record of ``task`` on ``gpu`` if its reference and harness are unchanged since: this
    machine's, else (``known``) the package's known set's."""
    p = folder(gpu, cache) / f"{task.id}.json"
    rec: VerdictRecord | None
    try:
        rec = VerdictRecord.model_validate_json(p.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        rec = known_set(gpu).get(task.id) if known else None
    return rec if rec is not None and _holds(task, rec) else None


def _holds(task: Task, rec: VerdictRecord) -> bool:
    """Whether a record still describes the task: the same reference, harness and broken start."""
    ref, harness = _hashes(task)
    if rec.reference_hash != ref or rec.harness_hash != harness or rec.task_id != task.id:
        return False
    return not rec.broken_hash or rec.broken_hash == _broken_hash(task)


@dataclass
class Selection:
    """The tasks a run uses on one GPU, and the others with their reasons."""

    use: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    unvalidated: list[str] = field(default_factory=list)
    relabelled: dict[str, str] = field(default_factory=dict)
    """task id -> observed category, for tasks usable with a corrected label."""

    def summary(self, gpu: str | None) -> list[str]:
        """Lines saying what was skipped and why (empty when nothing was)."""
        out = []
        where = gpu or "this machine"
        if self.skipped:
            out.append(f"{len(self.skipped)} task(s) skipped as unusable on {where}:")
            out += [f"  {t}: {why}" for t, why in sorted(self.skipped.items())]
        if self.unvalidated and gpu:
            out.append(
                f"{len(self.unvalidated)} task(s) not validated on {gpu} yet, run anyway "
                "(beavertui corpus validate, on that GPU, records their verdicts)"
            )
        return out


def select(tasks: Iterable[Task], gpu: str | None, cache: Path | None = None) -> Selection:
    """Usable tasks first: unusable ones (by their stored verdict on ``gpu``) are skipped with the reason."""
    sel = Selection()
    for t in tasks:
        rec = load(t, gpu, cache) if gpu else None
        if rec is None:
            sel.unvalidated.append(t.id)
            sel.use.append(t.id)
        elif rec.verdict == "unusable":
            known = " (the package's known verdicts)" if rec.known else ""
            sel.skipped[t.id] = f"unusable on {gpu}{known}: {rec.reason}"
        else:
            sel.use.append(t.id)
            if rec.verdict == "usable_relabelled" and rec.observed_category:
                sel.relabelled[t.id] = rec.observed_category
    return sel
