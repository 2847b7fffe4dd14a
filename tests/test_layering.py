"""The architecture as a test: which layer may import which, no import cycle, and what each module loads alone.

Layers, bottom up: ``engine`` (no UI library, nothing of beavertui above it), ``batch`` and ``reports`` (over
the engine), ``service`` (what a command does, typed; no UI), then the two front ends, ``commands`` (the CLI,
the only place that sees argparse) and ``tui``. Every import counts, also one inside a function, because a
lazy import is still a dependency; only imports for type annotations (``if TYPE_CHECKING:``) do not.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "beavertui"

#: What each layer may import from beavertui (besides itself and the package root's ``__version__``).
ALLOWED: dict[str, set[str]] = {
    "engine": set(),
    "batch": {"engine", "reports"},
    "reports": {"engine"},
    "console": {"engine"},
    "service": {"engine", "batch", "reports"},
    "tui": {"engine", "batch", "reports", "service"},
    "commands": {"engine", "batch", "reports", "service", "console", "tui"},
    "cli": {"engine", "commands"},
    "__main__": {"cli"},
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of the tree except what sits under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)
    return out


def imports_of(module: str) -> set[str]:
    """Every beavertui module ``module`` imports, anywhere in its file, resolved to a module of the tree."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in _runtime_nodes(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        for name in names:
            if not name.startswith("beavertui"):
                continue
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def test_layers_import_only_what_is_below_them() -> None:
    wrong = []
    for module, deps in GRAPH.items():
        mine = layer(module)
        for dep in deps:
            theirs = layer(dep)
            if dep == "beavertui" or theirs == mine:
                continue
            if theirs not in ALLOWED.get(mine, set()):
                wrong.append(f"{module} -> {dep}")
    assert wrong == []


def test_no_import_cycle() -> None:
    # Tarjan's strongly connected components over every import of every module
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in GRAPH:
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_layer_graph_is_read() -> None:
    """The checks above see real edges (a parse that found none would pass them vacuously)."""
    assert "beavertui.engine.session.events" in GRAPH["beavertui.engine.session.state"]
    assert "beavertui.service.batch" in GRAPH["beavertui.commands.batch"]
    assert layer("beavertui.tui.panes.log") == "tui"


_PROBE = (
    "import importlib, json, sys; importlib.import_module(sys.argv[1]); "
    "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich', 'numpy', 'pydantic'})))"
)


def _loaded_alone(module: str) -> tuple[str, list[str] | str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, module], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    if out.returncode != 0:
        return module, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"
    return module, json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_module_imports_alone_and_headless_modules_load_no_textual() -> None:
    names = [m for m in MODULES if not m.endswith("__main__")]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(pool.map(_loaded_alone, names))
    failed = {m: r for m, r in results.items() if isinstance(r, str)}
    assert failed == {}
    headless = [m for m in names if layer(m) != "tui"]
    assert [m for m in headless if "textual" in results[m]] == []
    engine = [m for m in names if layer(m) == "engine"]
    assert [m for m in engine if "rich" in results[m]] == []
    assert "textual" in results["beavertui.tui.app"]  # the probe sees what a module loads


def test_help_loads_no_textual_numpy_or_pydantic() -> None:
    code = (
        "import sys, json\n"
        "from beavertui.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'textual', 'numpy', 'pydantic', 'rich', 'scipy', 'openai'})), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "usage: beavertui" in out.stdout
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []
