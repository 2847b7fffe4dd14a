"""Reference timings cached per GPU signature (docs/metrics.md, How a speedup is measured).

Native tasks keep them in the task folder (``baselines/<slug>.json``); release corpora are treated as
read-only, so theirs go to the user cache (``~/.cache/beavertui/baselines/<task>/<slug>.json``). A
baseline is only valid for the same GPU signature, reference hash and harness hash. No measuring here.

Many release instances share one reference: the same reference file and testbench, run and timed by the
same commands (only the broken start differs). A baseline measured for one of them is also stored by content
(``<cache>/baselines/_shared/<share key>/<slug>.json``, share_key), and ``load`` of a task without a baseline
of its own finds it there: the reference is timed once for all of them, and the baseline found says for
which task it was measured (Baseline.note).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beavertui.engine.corpus import families
from beavertui.engine.corpus.harness import harness_hash, hash_tree, reference_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.fileio import write_atomic
from beavertui.engine.paths import cache_dir
from beavertui.engine.session.events import GpuSignature


class Baseline(BaseModel):
    """One task's reference timing on one GPU and toolkit."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    """Task id."""
    gpu: GpuSignature
    """Where it was measured."""
    method: str
    """How: ``beaver_time_ms``, ``cupti`` or ``ncu``."""
    median_ms: float
    """Median reference time, milliseconds."""
    cv: float
    """Coefficient of variation of the samples (fraction)."""
    samples: list[float] = Field(default_factory=list)
    """Every raw sample, milliseconds."""
    unstable: bool = False
    """CV above 3% after one re-measurement."""
    reference_hash: str
    """sha256 prefix of the reference source."""
    harness_hash: str
    """sha256 prefix of the harness (corpus/harness.py)."""
    clocks: str = ""
    """SM clock, memory clock and temperature seen (nvidia-smi)."""
    measured_at: float = Field(default_factory=time.time)
    """Seconds since the epoch."""
    tflops: float | None = None
    """Achieved TFLOP/s from input.json work.flop, if given."""
    gbps: float | None = None
    """Achieved GB/s from input.json work.bytes, if given."""
    share_key: str = ""
    """The content-addressed copy only: the share_key it is stored under."""
    note: str | None = Field(default=None, exclude=True)
    """Set by load, never stored: for a baseline measured for another task with the same share key, the
    sentence saying so (shared_note)."""


#: Folder under ``<cache>/baselines/`` of the content-addressed copies (one per share key and GPU signature).
SHARED = "_shared"


def shared_note(measured_for: str) -> str:
    """What a baseline measured for another task with the same share key says about itself."""
    return f"reference timed once for tasks with the same reference and harness: measured for {measured_for}"


def share_key(task: Task, harness: str | None = None) -> str:
    """What decides a reference timing besides the GPU, as one digest: two tasks with the same key time the
    very same measurement, so a baseline of one is the other's (on the same GPU signature).

    In it: the whole reference; the harness hash (``harness``, default: computed); what the family makes of
    the reference and how it is timed (layout, family, level, families.family_of); every command, the solution
    file and the time limits; the shared folders' names, the linked folders and PYTHONPATH entries (by path:
    they are not hashed with the harness), the in-process timing driver with its timing sources by content;
    the declared work (the baseline's throughput) and hardware needs. Not in it: the task id, label, broken
    start, prompt and metadata, which no reference run reads."""
    sem = families.family_of(task)
    d = task.timing_driver
    doc = {
        "v": 1,
        "reference": hashlib.sha256((task.reference() or "").encode()).hexdigest(),
        "harness": harness if harness is not None else harness_hash(task),
        "layout": task.layout,
        "family": task.family,
        "level": task.level,
        "semantics": [sem.name, sem.reference, sem.speed],
        "solution_file": task.solution_file,
        "commands": [task.build_command, task.test_command, task.benchmark_command],
        # the task's own limits: a session's run limit from its reference's run time changes no timing
        "timeouts": [task.timeouts.build_s, task.timeouts.own_run_s or task.timeouts.run_s],
        "extra_dirs": [dest for _, dest in task.extra_dirs],
        "linked_dirs": [[str(src.resolve()), dest] for src, dest in task.linked_dirs],
        "pythonpath": [str(p.resolve()) for p in task.pythonpath],
        "timing_driver": None
        if d is None
        else {
            "commands": [d.library_command, d.library, d.driver_command, d.driver, d.driver_args],
            "folders": [[dest, sorted(hash_tree(src, set()).items())] for src, dest in d.folders],
            "unavailable": d.unavailable,
        },
        "work": [task.work_flop, task.work_bytes],
        "hardware": [task.min_sm, list(task.required_features)],
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


def shared_path(key: str, slug: str, cache: Path | None = None) -> Path:
    """Where the content-addressed copy of a baseline with share key ``key`` on GPU ``slug`` lives."""
    return (cache or cache_dir()) / "baselines" / SHARED / key / f"{slug}.json"


def path_for(task: Task, slug: str, cache: Path | None = None) -> Path:
    """Where the baseline of ``task`` on GPU ``slug`` lives."""
    if task.layout == "native" and os.access(task.root, os.W_OK):
        return task.root / "baselines" / f"{slug}.json"
    return (cache or cache_dir()) / "baselines" / task.id / f"{slug}.json"


def _read(p: Path) -> Baseline | None:
    if not p.is_file():
        return None
    try:
        return Baseline.model_validate_json(p.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None


def as_found_for(b: Baseline, task: Task) -> Baseline:
    """``b`` as found for ``task``: with shared_note when it was measured for another task."""
    return b if b.task_id == task.id else b.model_copy(update={"note": shared_note(b.task_id)})


def load(task: Task, gpu: GpuSignature, harness: str, cache: Path | None = None) -> Baseline | None:
    """The stored baseline if it matches this GPU, reference and harness; else None.

    The task's own baseline first; without one, the one measured for any task with the same share key on
    this GPU signature (its ``note`` names that task)."""

    def fits(b: Baseline) -> bool:
        return (
            b.gpu.slug == gpu.slug and b.reference_hash == reference_hash(task) and b.harness_hash == harness
        )

    for p in (task.root / "baselines" / f"{gpu.slug}.json", path_for(task, gpu.slug, cache)):
        b = _read(p)
        if b is not None and fits(b):
            return as_found_for(b, task)
    key = share_key(task, harness)
    b = _read(shared_path(key, gpu.slug, cache))
    if b is not None and fits(b) and b.share_key == key:
        return as_found_for(b, task)
    return None


def _write(p: Path, baseline: Baseline) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, baseline.model_dump_json(indent=2) + "\n")


def save(task: Task, baseline: Baseline, cache: Path | None = None) -> Path:
    """Store ``baseline`` as ``task``'s (path_for); one measured for this task (its task_id) with this task's
    reference is also stored by content (shared_path) for the tasks with the same share key. Returns the
    task's path."""
    p = path_for(task, baseline.gpu.slug, cache)
    _write(p, baseline.model_copy(update={"share_key": ""}))
    if baseline.task_id == task.id and baseline.reference_hash == reference_hash(task):
        key = share_key(task, baseline.harness_hash)
        with contextlib.suppress(OSError):  # the task's own baseline stands; the others time theirs
            _write(shared_path(key, baseline.gpu.slug, cache), baseline.model_copy(update={"share_key": key}))
    return p
