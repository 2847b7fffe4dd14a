"""The task's reference for timing: built once per (reference, harness, toolkit) in a cached work dir
(reference_workdir), or adopted from a passing check (adopt_reference_build); and the result of timing it
alone (ReferenceTiming, for baselines)."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.corpus import families, harness
from beavertui.engine.corpus.task import Task
from beavertui.engine.fileio import remove_tree, write_atomic
from beavertui.engine.host.gpu import nvcc_version
from beavertui.engine.paths import cache_dir
from beavertui.engine.stage import stages
from beavertui.engine.timing.config import TimingConfig
from beavertui.engine.timing.samples import SpeedupUnavailable


def reference_key(task: Task) -> str:
    ref = task.reference() or ""
    h = hashlib.sha256(ref.encode())
    h.update(harness.harness_hash(task).encode())
    h.update((nvcc_version() or "").encode())
    return h.hexdigest()[:20]


def refbuild_dir(task: Task, tcfg: TimingConfig) -> Path:
    """Where the reference build of this task, harness and toolkit is cached."""
    return (tcfg.cache or cache_dir()) / "refbuild" / f"{task.id[:60]}-{reference_key(task)}"


def reference_workdir(task: Task, config: stages.StageConfig, tcfg: TimingConfig) -> stages.WorkDir:
    """The reference built in its own work dir, cached per reference + harness + toolkit."""
    code = families.reference_submission(task)
    if code is None:
        raise SpeedupUnavailable(f"{task.id}: {families.why_no_reference_submission(task)}")
    final = refbuild_dir(task, tcfg)
    root = final.parent
    if (final / ".beaver-built").is_file():
        return stages.WorkDir(path=final, task=task, manifest={}, links={})
    root.mkdir(parents=True, exist_ok=True)
    as_run = families.for_code(task, code)
    work = stages.prepare(as_run, code, root)
    result = stages.build(work, config)
    if result.rc != 0:
        stages.remove(work)
        last = [ln for ln in result.log.splitlines() if ln.strip()][-1:] or ["(no output)"]
        raise SpeedupUnavailable(f"{task.id}: the reference does not build here ({last[0][:200]})")
    write_atomic(work.path / ".beaver-built", (result.command or "") + "\n")
    if final.exists():
        remove_tree(final)
    try:
        work.path.rename(final)
    except OSError:
        return work  # another process won the race; use this copy
    return stages.WorkDir(path=final, task=task, manifest={}, links={})


def adopt_reference_build(task: Task, tcfg: TimingConfig, work: stages.WorkDir, build_command: str) -> None:
    """Keep an already built and passing reference work dir as the cached reference build (no rebuild)."""
    final = refbuild_dir(task, tcfg)
    if (final / ".beaver-built").is_file():
        stages.remove(work)
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(work.path / ".beaver-built", build_command + "\n")
    try:
        shutil.move(str(work.path), str(final))
    except OSError:
        stages.remove(work)  # reference_workdir builds it again when timing needs it


@dataclass(frozen=True)
class ReferenceTiming:
    """The reference alone, for baselines (corpus validate)."""

    method: str
    median_ms: float
    cv: float
    samples: list[float]
    unstable: bool
    note: str | None = None
