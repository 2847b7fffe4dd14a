"""Reference timings cached per GPU signature (docs/metrics.md, How a speedup is measured).

Native tasks keep them in the task folder (``baselines/<slug>.json``); release corpora are treated as
read-only, so theirs go to the user cache (``~/.cache/beavertui/baselines/<task>/<slug>.json``). A
baseline is only valid for the same GPU signature, reference hash and harness hash. No measuring here.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import GpuSignature
from beavertui.engine.timing.cupti import cache_dir


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


def reference_hash(task: Task) -> str:
    return hashlib.sha256((task.reference() or "").encode()).hexdigest()[:16]


def path_for(task: Task, slug: str, cache: Path | None = None) -> Path:
    """Where the baseline of ``task`` on GPU ``slug`` lives."""
    if task.layout == "native" and os.access(task.root, os.W_OK):
        return task.root / "baselines" / f"{slug}.json"
    return (cache or cache_dir()) / "baselines" / task.id / f"{slug}.json"


def load(task: Task, gpu: GpuSignature, harness: str, cache: Path | None = None) -> Baseline | None:
    """The stored baseline if it matches this GPU, reference and harness; else None."""
    for p in (task.root / "baselines" / f"{gpu.slug}.json", path_for(task, gpu.slug, cache)):
        if not p.is_file():
            continue
        try:
            b = Baseline.model_validate_json(p.read_text(encoding="utf-8"))
        except (OSError, ValidationError):
            continue
        if b.gpu.slug == gpu.slug and b.reference_hash == reference_hash(task) and b.harness_hash == harness:
            return b
    return None


def save(task: Task, baseline: Baseline, cache: Path | None = None) -> Path:
    p = path_for(task, baseline.gpu.slug, cache)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(baseline.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(p)
    return p
