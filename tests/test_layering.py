"""The architecture as a test: which layer may import which, no import cycle, and what each module loads alone.

Layers, bottom up: ``engine`` (no UI library, nothing of beavertui above it), ``batch`` and ``reports`` (over
the engine), ``service`` (what a command does, typed; no UI), then the two front ends, ``commands`` (the CLI,
the only place that sees argparse) and ``tui``. Inside the engine, its sub-packages stand in floors
(``ENGINE_FLOORS``): each imports only sub-packages on floors below its own. Every import counts, also one
inside a function, because a lazy import is still a dependency; only imports for type annotations
(``if TYPE_CHECKING:``) do not.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
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

#: The engine's sub-packages (and its top-level modules), bottom up (docs/architecture.md, "The engine in one
#: order"). A sub-package may import its own modules and those of the floors below it, never one of its own
#: floor or above.
ENGINE_FLOORS: list[set[str]] = [
    {"errors", "paths", "bundled", "code", "limits"},
    {"fileio"},
    {"session"},
    {"host"},
    {"judge"},
    {"corpus"},
    {"stage", "models", "importers"},
    {"timing"},
    {"toolchain", "metrics"},
    {"loop", "validation"},
    {"analysis"},
]


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


def engine_part(module: str) -> str | None:
    """The engine sub-package (or top-level engine module) ``module`` belongs to; None outside the engine."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "engine" else None


def engine_floor(part: str) -> int:
    return next(i for i, floor in enumerate(ENGINE_FLOORS) if part in floor)


def test_every_engine_part_has_a_floor() -> None:
    parts = {p for p in (engine_part(m) for m in MODULES) if p is not None}
    placed = set().union(*ENGINE_FLOORS)
    assert sorted(parts - placed) == []  # a new sub-package needs its place in the order
    assert sorted(placed - parts) == []  # no floor names a sub-package that is gone


def test_engine_parts_import_only_floors_below_them() -> None:
    wrong = []
    for module, deps in GRAPH.items():
        mine = engine_part(module)
        if mine is None:
            continue
        for dep in deps:
            theirs = engine_part(dep)
            if theirs is None or theirs == mine:
                continue
            if engine_floor(theirs) >= engine_floor(mine):
                wrong.append(f"{module} -> {dep}")
    assert wrong == []


def test_the_engine_floors_are_read() -> None:
    """The engine check sees real edges between sub-packages, and would see one that runs back up."""
    assert "beavertui.engine.stage.stages" in GRAPH["beavertui.engine.toolchain.local"]
    assert engine_part("beavertui.engine.toolchain.local") == "toolchain"
    assert engine_part("beavertui.engine.paths") == "paths"
    assert engine_part("beavertui.batch.job") is None
    assert engine_floor("toolchain") > engine_floor("stage") > engine_floor("corpus")


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


#: One interpreter that imports nothing of beavertui itself and forks a fresh child for every module: each
#: child imports its module alone, as a new interpreter would (the parent has loaded only what the
#: interpreter's start and this script load, none of the libraries looked for), and writes back the
#: libraries it then has loaded, or the last line of its error. Forking from one interpreter instead of
#: starting one per module saves an interpreter start per module (about a third of the time).
_FORK_PROBE = r"""
import json, os, signal, sys, traceback

WATCHED = {"textual", "rich", "numpy", "pydantic"}
names, width, limit = sys.argv[3:], int(sys.argv[1]), int(sys.argv[2])
results, running = {}, {}


def child(name, fd):
    signal.alarm(limit)  # a module whose import hangs is killed (SIGALRM) and reported so
    try:
        __import__("importlib").import_module(name)
        res = sorted({m.split(".")[0] for m in sys.modules} & WATCHED)
    except BaseException as exc:
        res = traceback.format_exception_only(type(exc), exc)[-1].strip()
    os.write(fd, json.dumps(res).encode())
    os._exit(0)


def reap():
    pid, status = os.wait()
    name, fd = running.pop(pid)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    data = b"".join(chunks)
    results[name] = json.loads(data) if data else f"exit {os.waitstatus_to_exitcode(status)}"


for name in names:
    while len(running) >= width:
        reap()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(name, w)
    os.close(w)
    running[pid] = (name, r)
while running:
    reap()
print(json.dumps(results))
"""


def loaded_alone(modules: list[str], width: int = 4, limit_s: int = 120) -> dict[str, list[str] | str]:
    """For each module, imported alone in a fresh process: the watched libraries it loaded, or its error."""
    out = subprocess.run(
        [sys.executable, "-c", _FORK_PROBE, str(width), str(limit_s), *modules],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60 + limit_s * len(modules) / width,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_module_imports_alone_and_headless_modules_load_no_textual() -> None:
    names = [m for m in MODULES if not m.endswith("__main__")]
    results = loaded_alone(names)
    assert sorted(results) == sorted(names)
    failed = {m: r for m, r in results.items() if isinstance(r, str)}
    assert failed == {}
    headless = [m for m in names if layer(m) != "tui"]
    assert [m for m in headless if "textual" in results[m]] == []
    engine = [m for m in names if layer(m) == "engine"]
    assert [m for m in engine if "rich" in results[m]] == []
    assert "textual" in results["beavertui.tui.app"]  # the probe sees what a module loads


def test_the_import_probe_reports_an_error_and_sees_no_import_of_an_earlier_module() -> None:
    """Each module is imported in its own child: one that fails is reported with its error line, and a
    module imported by an earlier child is not loaded in the next (the children start alike)."""
    got = loaded_alone(["beavertui.tui.app", "beavertui.engine", "beavertui.no_such_module"], width=1)
    assert "textual" in got["beavertui.tui.app"]
    assert got["beavertui.engine"] == []
    assert (
        got["beavertui.no_such_module"] == "ModuleNotFoundError: No module named 'beavertui.no_such_module'"
    )


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


#: The most lines a module of the package may have: past it, a module holds more than one responsibility
#: and is split by them (docs/architecture.md).
MAX_MODULE_LINES = 800


def test_no_module_is_over_the_line_limit() -> None:
    sizes = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted((ROOT / "beavertui").rglob("*.py"))
    }
    assert sizes, "no module read"
    over = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, f"split these by responsibility (at most {MAX_MODULE_LINES} lines a module): {over}"
