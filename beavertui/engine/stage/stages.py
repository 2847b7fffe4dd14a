"""One attempt's mechanics: a fresh work dir, the build, the test, and the harness integrity check.

The work dir is a copy of the task's testbench plus its shared folders, with the candidate written to
``solution_file``. Build and test run through sandbox.run with the task's per-stage limits, the
release command adaptations (adapt.py) and a scrubbed environment. The harness is hashed before the
build; files the build rewrites that are not sources are build outputs, every other harness file
must be unchanged after the test, and so must the corpus folders it was copied from (a write through an
absolute path). Harness sources in the work dir are made read-only. This module does not classify,
sanitize or time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from beavertui.engine.corpus import families
from beavertui.engine.corpus.harness import harness_hash, hash_tree
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import remove_tree
from beavertui.engine.host import sandbox
from beavertui.engine.host.adapt import adapt_command, adapt_env
from beavertui.engine.paths import cache_dir
from beavertui.engine.session.events import StageResult

#: Files whose change during the build is tampering, not a build output.
SOURCE_SUFFIXES = frozenset(
    {
        ".cu",
        ".cuh",
        ".c",
        ".cc",
        ".cpp",
        ".h",
        ".hpp",
        ".py",
        ".mk",
        ".cmake",
        ".txt",
        ".json",
        ".sh",
        ".impl",
    }
)


#: The niceness build stages get by default (StageConfig.build_nice; ``nice -n``, 0 to 19; 0: none).
BUILD_NICE = 0


#: Highest CPU number a CPU list may name (Linux's largest NR_CPUS, 8,192 CPUs).
MAX_CPU = 8191


def parse_cpus(text: str) -> frozenset[int]:
    """The CPUs of a list such as "0,2-7"; ValueError when it is not one or names a CPU above MAX_CPU."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not _whole(lo) or (sep and not _whole(hi)):
            raise ValueError(part)
        first, last = int(lo), int(hi) if sep else int(lo)
        if not first <= last <= MAX_CPU:  # a range to 10^11 was a set of 10^11 numbers
            raise ValueError(part)
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def _whole(text: str) -> bool:
    return text.isascii() and text.isdecimal()


@dataclass(frozen=True)
class StageConfig:
    """How stages run on this machine. The engine reads no environment variable: the build and timing CPU
    settings users give as ``BEAVERTUI_BUILD_NICE``, ``BEAVERTUI_BUILD_CPUS`` and ``BEAVERTUI_TIMING_CPUS``
    are read and checked where a command starts (service/environment.py) and arrive here as fields."""

    sm: int | None = None
    """Local compute capability (90 for an H200) for the arch adaptations; None leaves them."""
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    """Resource limits of every stage."""
    base_dir: Path | None = None
    """Where work dirs are made (default: the system temp dir)."""
    env: Mapping[str, str] | None = None
    """Base environment before scrubbing (default: os.environ)."""
    build_s: float | None = None
    """Override of the task's build limit, seconds."""
    run_s: float | None = None
    """Override of the task's run limit, seconds."""
    read_only: tuple[Path, ...] = field(default_factory=lambda: (cache_dir(),))
    """Folders stages may read but not change, besides the corpus and its linked libraries (where a
    mount namespace is available): beavertui's cache, with reference builds and baselines."""
    build_nice: int = BUILD_NICE
    """Niceness added to build stages (``BEAVERTUI_BUILD_NICE``): builds then yield the CPU to the stages whose
    time is measured (a timing stage's processes) when every core is busy. 0 by default: on the H200, beside
    12 building threads, +10 did not make a timing stage measurably shorter (docs/lab/h200-2026-12-04.md)."""
    build_cpus: str | None = None
    """The CPUs build stages may use (``BEAVERTUI_BUILD_CPUS``, a ``taskset -c`` list); None: every CPU."""
    timing_cpus: str | None = None
    """The CPUs timing stages may use (``BEAVERTUI_TIMING_CPUS``): every timed process, started in its turn
    or ahead of it; None: every CPU."""
    harness_proof: bool = True
    """Correctness runs carry a harness proof where it applies (engine/judge/harness_proof.py: native tasks
    and the release's nvcc-built harness families)."""
    pausable: Callable[[sandbox.Started], AbstractContextManager[object]] | None = None
    """Where a stage's process is registered while it runs (a batch's shared GPU hold: the pool may stop
    it while a timing stage holds the GPU alone; batch/gpu_pool.py, batch/build_slots.py); None: never stopped."""


#: What ``WorkDir.verify`` reports when the task's own corpus folders changed during the attempt.
CORPUS_CHANGED = "<corpus testbench or shared folders changed on disk>"


@dataclass
class WorkDir:
    """A prepared work dir and its harness manifest."""

    path: Path
    task: Task
    manifest: dict[str, str]
    links: dict[str, str]
    build_outputs: set[str] = field(default_factory=set)
    origin: str = ""
    """harness_hash of the task's corpus folders when the work dir was made ("" when not taken)."""

    def note_build(self) -> list[str]:
        """After the build: changed non-source files become build outputs; changed sources are tampering."""
        now = hash_tree(self.path, {self.task.solution_file})
        tampered = []
        for rel, digest in self.manifest.items():
            if now.get(rel) != digest:
                if is_tamper_target(rel):
                    tampered.append(rel)
                else:
                    self.build_outputs.add(rel)
        return tampered

    def verify(self) -> list[str]:
        """Harness files changed, removed, or links redirected since the work dir was made."""
        now = hash_tree(self.path, {self.task.solution_file})
        bad = [rel for rel, d in self.manifest.items() if rel not in self.build_outputs and now.get(rel) != d]
        for rel, target in self.links.items():
            p = self.path / rel
            if not p.is_symlink() or os.readlink(p) != target:
                bad.append(rel)
        if self.origin and harness_hash(self.task) != self.origin:
            bad.append(CORPUS_CHANGED)
        return sorted(bad)


def prepare(task: Task, code: str, base_dir: Path | None = None) -> WorkDir:
    """A fresh work dir with the testbench, shared folders and the candidate."""
    base = base_dir or Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"beaver-{task.id[:48]}-", dir=base))
    try:
        origin = harness_hash(task)
        shutil.copytree(task.testbench, path, symlinks=True, dirs_exist_ok=True)
        for src, dest in task.extra_dirs:
            if src.is_dir():
                shutil.copytree(src, path / dest, symlinks=True, dirs_exist_ok=True)
        links: dict[str, str] = {}
        for src, dest in task.linked_dirs:
            if not src.is_dir():
                continue
            target = path / dest
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                remove_tree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(src.resolve(), target_is_directory=True)
            links[dest] = str(src.resolve())
        sol = path / task.solution_file
        if not sol.resolve().is_relative_to(path.resolve()):
            raise BeaverError(f"{task.id}: solution_file {task.solution_file!r} escapes the work dir")
        sol.parent.mkdir(parents=True, exist_ok=True)
        if sol.is_symlink():
            sol.unlink()
        sol.write_text(code, encoding="utf-8")
        manifest = hash_tree(path, {task.solution_file})
        _write_protect(path, manifest)
    except OSError as exc:
        remove_tree(path)
        raise BeaverError(f"{task.id}: cannot prepare a work dir in {base}: {exc}") from None
    except BaseException:
        remove_tree(path)  # a refused solution path leaves nothing behind
        raise
    return WorkDir(path=path, task=task, manifest=manifest, links=links, origin=origin)


def is_tamper_target(rel: str) -> bool:
    """Whether a harness file's change is tampering (a source, Makefile) rather than a build output."""
    return Path(rel).suffix.lower() in SOURCE_SUFFIXES or Path(rel).name == "Makefile"


def _write_protect(root: Path, manifest: Mapping[str, str]) -> None:
    """chmod a-w on the harness sources of a work dir (shipped binaries stay writable: builds replace them).

    This stops an unprivileged candidate from editing them in place; root ignores file modes, so the
    hash check of ``WorkDir.verify`` is what catches tampering in every case.
    """
    for rel in manifest:
        if is_tamper_target(rel):
            p = root / rel
            p.chmod(p.stat().st_mode & ~0o222)


def remove(work: WorkDir) -> None:
    """Delete a work dir (links are removed, never followed)."""
    remove_tree(work.path)


@contextmanager
def workdir(task: Task, code: str, config: StageConfig, keep: bool = False) -> Iterator[WorkDir]:
    """A prepared work dir, removed on exit unless ``keep``."""
    work = prepare(task, code, config.base_dir)
    try:
        yield work
    finally:
        if not keep:
            remove(work)


def stage_env(task: Task, config: StageConfig) -> dict[str, str]:
    """The scrubbed, adapted environment of a task's commands: beavertui's own environment through the
    allow-list (``sandbox.inherited_env``), or a configured one without credential-like names."""
    base = sandbox.scrub_env(config.env) if config.env is not None else sandbox.inherited_env(os.environ)
    return adapt_env(base, task.pythonpath, config.sm)


def run_stage(
    work: WorkDir,
    stage: Literal["build", "run", "sanitize", "benchmark"],
    command: str,
    timeout_s: float,
    config: StageConfig,
    adapt: bool = True,
    extra_env: Mapping[str, str] | None = None,
) -> StageResult:
    """Run one command of the attempt in the work dir and record it; a build at the build priority
    (``StageConfig.build_nice``, ``build_cpus``), a timing stage on ``timing_cpus``."""
    started = start_stage(work, command, timeout_s, config, adapt, stage, extra_env)
    with nullcontext() if config.pausable is None else config.pausable(started.process):
        out = started.finish()
    return stage_result(stage, started.command, out)


@dataclass
class StartedStage:
    """A stage command started in its work dir and left running (``sandbox.Started``), as it was started."""

    command: str
    """The command as run (after adaptation)."""
    env: dict[str, str]
    """Its environment (stage_env's, before the sandbox's own folders)."""
    process: sandbox.Started

    def finish(self, timeout_s: float | None = None) -> sandbox.Outcome:
        return self.process.finish(timeout_s)


def stage_limits(
    config: StageConfig, stage: Literal["build", "run", "sanitize", "benchmark"]
) -> sandbox.Limits:
    """The sandbox limits of a stage of this kind: ``config.limits``, a build at the build priority and a
    timing stage on the timing CPUs."""
    if stage == "build" and (config.build_nice or config.build_cpus):
        return replace(config.limits, nice=config.build_nice, cpus=config.build_cpus)
    if stage == "benchmark" and config.timing_cpus:
        return replace(config.limits, cpus=config.timing_cpus)
    return config.limits


def start_stage(
    work: WorkDir,
    command: str,
    timeout_s: float,
    config: StageConfig,
    adapt: bool = True,
    stage: Literal["build", "run", "sanitize", "benchmark"] = "run",
    extra_env: Mapping[str, str] | None = None,
) -> StartedStage:
    """One command of the attempt started in the work dir the way run_stage runs it (same adaptation,
    environment, sandbox, kept and read-only folders, the limits of a ``stage`` of its kind), not waited
    for; ``timeout_s`` bounds its whole life. The caller reads and ends it (``StartedStage.finish``,
    ``process.stop``) and records it (stage_result)."""
    cmd = adapt_command(command, config.sm) if adapt else command
    keep = (*work.links.values(), *(str(p) for p in work.task.pythonpath))
    frozen = (str(work.task.corpus_root), *keep, *(str(p) for p in config.read_only))
    env = {**stage_env(work.task, config), **(extra_env or {})}
    limits = stage_limits(config, stage)
    process = sandbox.start(cmd, work.path, env, timeout_s, limits, keep=keep, read_only=frozen)
    return StartedStage(command=cmd, env=env, process=process)


def stage_result(
    stage: Literal["build", "run", "sanitize", "benchmark"], command: str, out: sandbox.Outcome
) -> StageResult:
    """The record of one stage command from what it did."""
    return StageResult(
        stage=stage,
        command=command,
        rc=out.rc,
        signal=out.signal,
        timed_out=out.timed_out,
        duration_s=round(out.duration_s, 4),
        log=out.log,
        log_bytes=out.log_bytes,
        stopped_by=out.stopped_by,
        sandbox=out.sandbox,
        paused_s=out.paused_s,
    )


def build(work: WorkDir, config: StageConfig) -> StageResult:
    limit = config.build_s or work.task.timeouts.build_s
    return run_stage(work, "build", work.task.build_command, limit, config)


def test(work: WorkDir, config: StageConfig) -> StageResult:
    """The task's test command, under the run limit of the toolchain, or else of the task (which a session
    sets from its reference's run time, engine/corpus/run_limit.py); the result says which and why."""
    if config.run_s:
        limit, source = config.run_s, "the toolchain's own run limit"
    else:
        limit = work.task.timeouts.run_s
        source = work.task.timeouts.run_from or f"the task's own limit ({limit:g} s)"
    from beavertui.engine.judge import harness_proof

    proof = None
    if config.harness_proof and families.family_of(work.task).harness_proof:
        lib = harness_proof.library()
        if lib is not None:
            proof = harness_proof.Proof.start(work.path, stage_env(work.task, config), lib)
    res = run_stage(
        work, "run", work.task.test_command, limit, config, extra_env=proof.env if proof else None
    )
    update: dict[str, object] = {"limit_s": limit, "limit_from": source}
    if proof is not None:
        update["harness_proof"] = proof.check()
    return res.model_copy(update=update)
