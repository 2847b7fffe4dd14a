"""Find and load tasks of both corpus layouts (docs/format.md, Tasks) into Task values.

A corpus root is a folder whose subfolders are tasks: the native ``corpus/`` (tasks carry
``error_log.txt`` and ``source_model``) or the CUDABeaver release's ``data/`` (given as ``data/`` or as
the release root holding it). Folders whose name starts with ``_`` are shared material, not tasks.
A malformed task yields one line naming the file and the problem; the other tasks still load.
This module reads files only: it never builds or runs anything; whether a loaded task can run on
this machine is ``runnable_here`` over a ``gpu.Machine`` probe.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from beavertui.engine.judge.categories import NATIVE_LABELS, RELEASE_LABELS
from beavertui.engine.errors import BeaverError, TaskError
from beavertui.engine.fileio import walk
from beavertui.engine.host.gpu import Machine
from beavertui.engine.corpus.task import Task, Timeouts, TimingDriver
from beavertui.engine.corpus import families
from beavertui.engine.corpus.meta import Hardware, InputMeta, InstanceMeta, StageTimeouts, Work


@dataclass(frozen=True)
class CorpusLoad:
    """Result of loading a corpus: the good tasks and one line per malformed one."""

    root: Path
    tasks: tuple[Task, ...]
    problems: tuple[str, ...]

    def get(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        bad = [p for p in self.problems if f"/{task_id}/" in p or p.startswith(f"{task_id}/")]
        if bad:
            raise TaskError(bad[0])
        raise TaskError(f"no task {task_id!r} in {self.root}")


def corpus_root(path: Path) -> Path:
    """The folder whose subfolders are tasks: ``path`` itself, or its ``data/`` (a release root), absolute.

    Absolute because every path of a task made from it (its PYTHONPATH entries, linked and copied folders)
    is used from inside a work dir, where a path relative to where the command was typed points nowhere.
    """
    if not path.is_dir():
        raise BeaverError(f"corpus {path}: not a folder")
    path = path.absolute()
    data = path / "data"
    if data.is_dir() and not (path / "instance.json").exists() and not _has_tasks(path):
        return data
    return path


def _has_tasks(path: Path) -> bool:
    return any((d / "instance.json").exists() for d in path.iterdir() if d.is_dir())


def load_corpus(path: Path, only: list[str] | None = None) -> CorpusLoad:
    """Load every task under a corpus root (or the ``only`` ids); malformed tasks become problem lines."""
    root = corpus_root(path)
    tasks: list[Task] = []
    problems: list[str] = []
    wanted = set(only) if only else None
    for d in sorted(root.iterdir()):
        if d.name.startswith(("_", ".")) or not d.is_dir() or d.name in ("harness",):
            continue
        if wanted is not None and d.name not in wanted:
            continue
        try:
            tasks.append(load_task(d, root))
        except TaskError as exc:
            problems.append(str(exc))
    if wanted is not None:
        found = {t.id for t in tasks} | {p.split("/")[0] for p in problems}
        for missing in sorted(wanted - found - {d.name for d in root.iterdir()}):
            problems.append(f"{missing}: no such task folder in {root}")
    return CorpusLoad(root=root, tasks=tuple(tasks), problems=tuple(problems))


def _rel(root: Path, p: Path) -> str:
    return f"{root.name}/{p.relative_to(root)}" if p.is_relative_to(root) else str(p)


def _read_json(task_dir: Path, name: str) -> dict[str, Any]:
    p = task_dir / name
    where = f"{task_dir.name}/{name}"
    if p.is_symlink():
        raise TaskError(f"{where}: is a symbolic link")
    if not p.is_file():
        raise TaskError(f"{where}: missing")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskError(f"{where}: not valid JSON ({exc})") from None
    except RecursionError:
        raise TaskError(f"{where}: not valid JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise TaskError(f"{where}: expected a JSON object, got {type(data).__name__}")
    return data


def _validate(model: type[BaseModel], data: dict[str, Any], where: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(root)"
        raise TaskError(f"{where}: field {loc!r}: {err['msg']}") from None


def _inside(task_dir: Path, rel: str, where: str) -> Path:
    """Resolve ``rel`` under ``task_dir`` and refuse anything that escapes it."""
    if os.path.isabs(rel) or not rel.strip():
        raise TaskError(f"{where}: path {rel!r} must be relative and non-empty")
    p = task_dir / rel
    if not p.resolve().is_relative_to(task_dir.resolve()):
        raise TaskError(f"{where}: path {rel!r} escapes the task folder")
    return p


def _check_symlinks(task_dir: Path) -> None:
    """No symbolic link leaves the task folder, and the folder is walked whole (``fileio.walk``: every
    folder readable, none deeper than 64), so the harness hash covers all of it."""
    base = task_dir.resolve()
    left: list[str] = []
    for p in walk(task_dir, left_out=left):
        if p.is_symlink() and not p.resolve().is_relative_to(base):
            raise TaskError(f"{task_dir.name}/{p.relative_to(task_dir)}: symbolic link escapes the task folder")
    if left:
        raise TaskError(f"{task_dir.name}: {left[0]}")


def _find_one(task_dir: Path, stem: str, named: str | None) -> Path | None:
    if named:
        p = _inside(task_dir, named, f"{task_dir.name}/instance.json")
        return p if p.is_file() else None
    hits = sorted(p for p in task_dir.glob(f"{stem}.*") if p.is_file())
    return hits[0] if len(hits) == 1 else None


def load_task(task_dir: Path, root: Path | None = None) -> Task:
    """Load one task folder; raises TaskError naming the file and the problem."""
    root = root or task_dir.parent
    name = task_dir.name
    inst = _validate(InstanceMeta, _read_json(task_dir, "instance.json"), f"{name}/instance.json")
    raw_input = _read_json(task_dir, "input.json")
    inp = _validate(InputMeta, raw_input, f"{name}/input.json")
    native = "source_model" in _read_json(task_dir, "instance.json")
    if inst.id != name:
        raise TaskError(f"{name}/instance.json: id {inst.id!r} differs from the folder name")
    if inp.task_id != name:
        raise TaskError(f"{name}/input.json: task_id {inp.task_id!r} differs from the folder name")
    allowed = NATIVE_LABELS if native else tuple(RELEASE_LABELS) + NATIVE_LABELS
    if inst.error_category not in allowed:
        raise TaskError(f"{name}/instance.json: unknown error_category {inst.error_category!r}")
    _check_symlinks(task_dir)
    solution = _inside(task_dir / "testbench", inp.solution_file, f"{name}/input.json")
    del solution
    files = inst.files or {}
    broken = _find_one(task_dir, "broken_start", files.get("broken_start"))
    if broken is None:
        raise TaskError(f"{name}/broken_start.*: missing (or more than one)")
    reference = _find_one(task_dir, "reference", files.get("reference"))
    prompt = _inside(task_dir, files.get("prompt", "prompt.txt"), f"{name}/instance.json")
    if not prompt.is_file():
        raise TaskError(f"{name}/{prompt.name}: missing")
    testbench = _inside(task_dir, files.get("testbench", "testbench/").rstrip("/"), f"{name}/instance.json")
    if not testbench.is_dir():
        raise TaskError(f"{name}/testbench/: missing")
    error_log = task_dir / "error_log.txt"
    if native:
        if reference is None:
            raise TaskError(f"{name}/reference.*: missing")
        if not error_log.is_file():
            raise TaskError(f"{name}/error_log.txt: missing")
        if inst.difficulty not in ("easy", "medium", "hard"):
            raise TaskError(f"{name}/instance.json: difficulty {inst.difficulty!r} is not easy|medium|hard")
        digest = hashlib.sha256(broken.read_bytes()).hexdigest()[:16]
        if inst.broken_start_hash and inst.broken_start_hash != digest:
            raise TaskError(
                f"{name}/instance.json: broken_start_hash {inst.broken_start_hash} does not match "
                f"{broken.name} (sha256 prefix {digest})"
            )
    family = families.family_for("native" if native else "release", inst.task_family, inp.level)
    extra, linked, pythonpath = _shared_material(root, native, inp, family)
    runnable, why = True, None
    build_command, test_command = inp.build_command, inp.test_command
    own = family.runner_commands(task_dir, root, inp, pythonpath)
    if own is not None:  # the family's runner makes the commands (the applied families)
        runnable, why, build_command, test_command, pythonpath = own
    elif not inp.build_command.strip() or not inp.test_command.strip():
        runnable, why = False, "no build or test command"
    else:
        for src, dest in linked:
            if not src.is_dir() and family.needs_library(dest.rsplit("/", 1)[-1], inp):
                runnable, why = False, f"missing {_rel(root, src)} (needed at {dest})"
                break
    # the release runs every build and test stage under 300 s (its shipped configs)
    t = inp.timeouts or (StageTimeouts() if native else StageTimeouts(build_s=300.0, run_s=300.0))
    hw = inp.hardware or Hardware()
    work = inp.work or Work()
    return Task(
        id=name,
        family=inst.task_family,
        label=inst.error_category,
        difficulty=inst.difficulty,
        root=task_dir,
        corpus_root=root,
        layout="native" if native else "release",
        build_command=build_command,
        test_command=test_command,
        solution_file=inp.solution_file,
        broken_start_path=broken,
        reference_path=reference,
        prompt_path=prompt,
        testbench=testbench,
        error_log_path=error_log if native else None,
        benchmark_command=inp.benchmark_command,
        tags=tuple(inp.tags),
        min_sm=hw.min_sm,
        required_features=tuple(hw.required_features),
        timeouts=Timeouts(build_s=t.build_s, run_s=t.run_s),
        upstream_library=inst.upstream_library,
        provenance=inst.broken_start_provenance,
        source_model=inst.source_model,
        broken_start_hash=inst.broken_start_hash,
        level=inp.level,
        extra_dirs=extra,
        linked_dirs=linked,
        pythonpath=pythonpath,
        work_flop=work.flop,
        work_bytes=work.bytes,
        runnable=runnable,
        not_runnable_reason=why,
        timing_driver=_timing_driver(inp, root),
    )


def _timing_driver(inp: InputMeta, root: Path) -> TimingDriver | None:
    d = inp.timing_driver
    if d is None:
        return None
    for name in (d.library, d.driver, d.folder):
        if Path(name).is_absolute() or ".." in Path(name).parts or not name.strip():
            raise TaskError(f"{inp.task_id}/input.json: timing_driver file {name!r} must stay inside the work dir")
    folder = root / d.folder
    missing = None if folder.is_dir() else f"its timing sources ({d.folder}/) are not in the corpus ({root})"
    return TimingDriver(
        d.library_command, d.library, d.driver_command, d.driver, d.driver_args,
        ((folder, d.folder),) if missing is None else (), missing,
    )  # fmt: skip


def _shared_material(
    root: Path, native: bool, inp: InputMeta, family: families.Family
) -> tuple[tuple[tuple[Path, str], ...], tuple[tuple[Path, str], ...], tuple[Path, ...]]:
    """Shared folders for a task: copied (native _common), linked (release _external), PYTHONPATH."""
    if native:
        common = root / "_common"
        return (((common, "_common"),) if common.is_dir() else ()), (), ()
    linked: list[tuple[Path, str]] = []
    commands = f"{inp.build_command} {inp.test_command}"
    if "reference_sources" in commands or inp.has_thunderkittens:
        external = root / "_external"
        for lib in ("cutlass", "ThunderKittens"):
            dest = f"reference_sources/{lib}"
            if dest in commands or (external / lib).is_dir() or family.needs_library(lib, inp):
                linked.append((external / lib, dest))
    vendor = [p for p in (root.parent / "harness" / "_vendor", root / "harness" / "_vendor") if p.is_dir()]
    return (), tuple(linked), tuple(vendor[:1])


def runnable_here(task: Task, machine: Machine) -> str | None:
    """Why ``task`` cannot run on ``machine``, or None when it can."""
    if not task.runnable:
        return task.not_runnable_reason or "not runnable"
    if machine.gpu is None:
        return "no NVIDIA GPU visible"
    if task.min_sm is not None and machine.sm is not None and machine.sm < task.min_sm:
        return f"needs sm_{task.min_sm}, this GPU is sm_{machine.sm}"
    commands = f"{task.build_command}\n{task.test_command}\n{task.benchmark_command or ''}"
    compiles = "nvcc" in commands or task.language in ("cuda", "cpp") or "make" in commands
    if compiles and machine.nvcc is None:
        return "nvcc not found on PATH"
    family = families.family_of(task)
    needs_torch = family.needs_torch or task.language == "python" or "torch" in commands
    if needs_torch and not machine.torch:
        return "torch is not importable by this interpreter"
    if "kernelbench" in commands and not task.pythonpath:
        import importlib.util

        if importlib.util.find_spec("kernelbench") is None:
            return "kernelbench package missing (no harness/_vendor beside the release's data/)"
    why = family.runnable_here(task, machine)
    if why is not None:
        return why
    missing = families.missing_python_modules(task)
    if missing:
        return families.describe_missing(missing)
    return None
