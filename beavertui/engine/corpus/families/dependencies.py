"""The Python modules a task's harness imports that this interpreter lacks (a task is then not runnable here,
saying which module and which package provides it)."""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import sys
from functools import lru_cache
from pathlib import Path

from beavertui.engine.corpus.task import Task

#: Import name -> the package that provides it, where the two differ.
PACKAGE_OF = {
    "dotenv": "python-dotenv",
    "yaml": "pyyaml",
    "cv2": "opencv-python",
    "PIL": "pillow",
    "sklearn": "scikit-learn",
}

_PY_FILE = re.compile(r"(?:^|\s)((?:[\w.-]+/)*[\w.-]+\.py)\b")

#: Modules the machine probe reports itself (gpu.Machine.torch), so not reported twice.
_PROBED = frozenset({"torch"})


def _unconditional_imports(path: Path) -> tuple[set[str], set[str]]:
    """(absolute module names, relative module names) imported at a module's top level, outside try/if."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set(), set()
    absolute: set[str] = set()
    relative: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            absolute.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = node.module or ""
                relative.update(base or a.name for a in node.names)
            elif node.module:
                absolute.add(node.module)
    return absolute, relative


def _resolve(module: str, roots: tuple[Path, ...]) -> Path | None:
    rel = Path(*module.split("."))
    for root in roots:
        for cand in (root / rel / "__init__.py", root.joinpath(*rel.parts[:-1], rel.name + ".py")):
            if cand.is_file():
                return cand
    return None


@lru_cache(maxsize=512)
def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def python_files(task: Task) -> tuple[list[Path], set[str]]:
    """The Python files a task's commands run and the modules its ``python -c`` snippets import."""
    commands = f"{task.build_command}\n{task.test_command}"
    files = []
    for m in _PY_FILE.finditer(commands):
        p = task.testbench / m.group(1)
        if p.is_file():
            files.append(p)
    modules: set[str] = set()
    for command in (task.build_command, task.test_command):
        try:
            argv = shlex.split(command)
        except ValueError:
            continue
        for i, arg in enumerate(argv[:-1]):
            if arg == "-c" and "python" in Path(argv[i - 1] if i else "").name:
                modules |= _snippet_imports(argv[i + 1])
    return files, modules


def _snippet_imports(code: str) -> set[str]:
    """Absolute modules a ``python -c`` snippet imports at its top level."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


def missing_python_modules(task: Task) -> list[str]:
    """Third-party modules the task's Python harness imports unconditionally that this interpreter lacks.

    Followed: the scripts its commands run, the modules its ``python -c`` snippets import, and, inside the
    folders on the task's PYTHONPATH (the release's vendored packages), every module those import at top
    level. Modules imported inside try/if blocks or functions are optional and not reported."""
    roots = task.pythonpath
    files, modules = python_files(task)
    seen_files: set[Path] = set()
    external: set[str] = set()
    todo: list[tuple[Path | None, str]] = [(None, m) for m in modules] + [(f, "") for f in files]
    while todo:
        path, module = todo.pop()
        if path is None:
            parts = module.split(".")
            local = [_resolve(".".join(parts[:i]), roots) for i in range(1, len(parts) + 1)]
            found = [p for p in local if p is not None]
            if not found:
                external.add(parts[0])
                continue
            for p in found:
                todo.append((p, ".".join(parts)))
            continue
        if path in seen_files:
            continue
        seen_files.add(path)
        absolute, relative = _unconditional_imports(path)
        for name in absolute:
            todo.append((None, name))
        pkg_dir = path.parent
        for name in relative:
            for cand in (pkg_dir / f"{name.split('.')[0]}.py", pkg_dir / name.split(".")[0] / "__init__.py"):
                if cand.is_file():
                    todo.append((cand, name))
        if path.name != "__init__.py" and (pkg_dir / "__init__.py").is_file():
            todo.append((pkg_dir / "__init__.py", ""))
    stdlib = set(sys.stdlib_module_names)
    return sorted(m for m in external if m not in stdlib and m not in _PROBED and not _importable(m))


def describe_missing(modules: list[str]) -> str:
    """``Python module 'dotenv' (pip install python-dotenv)`` for one or more modules."""
    parts = [f"'{m}'" + (f" (pip install {PACKAGE_OF[m]})" if m in PACKAGE_OF else "") for m in modules]
    noun = "module" if len(modules) == 1 else "modules"
    return f"Python {noun} {', '.join(parts)} not importable by {sys.executable}"


def dependency_lines(tasks: list[Task]) -> list[str]:
    """One line per family whose Python harness imports a module this interpreter lacks."""
    by: dict[tuple[str, tuple[str, ...]], int] = {}
    for t in tasks:
        missing = tuple(missing_python_modules(t))
        if missing:
            by[(t.family, missing)] = by.get((t.family, missing), 0) + 1
    return [
        f"{family} ({n} task{'s' if n != 1 else ''}): {describe_missing(list(mods))}; they are not runnable"
        for (family, mods), n in sorted(by.items())
    ]
