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
    {"errors", "paths", "bundled", "code", "limits", "csv_cells"},
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


def libraries_of(module: str) -> set[str]:
    """Every library outside beavertui ``module`` imports, anywhere in its file, by its top-level name."""
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found - {"beavertui"}


def reached_from(module: str) -> set[str]:
    """Every beavertui module ``module`` needs at run time: its imports, theirs, and so on."""
    seen: set[str] = set()
    stack = [module]
    while stack:
        for dep in GRAPH[stack.pop()] - seen:
            seen.add(dep)
            stack.append(dep)
    return seen


#: Libraries that draw on a terminal or a screen.
UI_LIBRARIES = {"rich", "textual"}


def test_the_service_reaches_no_ui_library_and_no_display() -> None:
    """Services print nothing and import no UI library (service/__init__.py): no service module imports rich
    or textual, nor reaches a module that does through its imports, however deep (a batch's progress table
    is the caller's to show: the CLI hands ``run_batch`` its display, the TUI its dashboard)."""
    ui = {m for m in MODULES if libraries_of(m) & UI_LIBRARIES}
    service = [m for m in MODULES if layer(m) == "service"]
    wrong = {m: sorted(({m} | reached_from(m)) & ui) for m in service}
    assert {m: found for m, found in wrong.items() if found} == {}
    assert "beavertui.commands.batch_progress" in ui and "beavertui.reports.fit" in ui  # it sees them ...
    assert "beavertui.reports.fit" in reached_from("beavertui.batch.progress")  # ... and edges past the first
    assert "beavertui.batch.local_executor" in reached_from("beavertui.service.batch")


#: Front-end layers that turn input into a service's or the engine's typed objects but never build or check
#: those objects themselves: which values a typed model accepts, and the one-line refusal of one it does not,
#: are the service's (service/__init__.py), so the CLI and the TUI refuse alike.
NO_PYDANTIC = ("commands", "cli", "console")


def test_the_cli_validates_no_typed_model_itself() -> None:
    wrong = sorted(m for m in MODULES if layer(m) in NO_PYDANTIC and "pydantic" in libraries_of(m))
    assert wrong == []
    assert "pydantic" in libraries_of("beavertui.service.live")  # the check reads imports inside functions


#: The endpoint model the engine calls: a front end names a model and the service builds it (a resumed
#: session's endpoint is rebuilt from its header by service/live.py ``resumed_model``), so the CLI never
#: constructs or configures one itself.
ENDPOINT_MODEL = "beavertui.engine.models.openai_model"


def test_no_command_builds_the_endpoint_model() -> None:
    wrong = sorted(m for m in MODULES if layer(m) == "commands" and ENDPOINT_MODEL in GRAPH[m])
    assert wrong == []
    assert ENDPOINT_MODEL in GRAPH["beavertui.service.preflight"]  # the check sees the module's importers


#: Standalone scripts run as a file in a child interpreter: they import nothing of beavertui by design
#: (their docstrings say why), so they may not share a helper with the package.
STANDALONE = {"beavertui.engine.timing.kernelbench_driver", "beavertui.engine.timing.baselines_driver"}


def module_functions(module: str) -> dict[str, str]:
    """Each module-level function of ``module``: its name -> its arguments and body (docstring left out)."""
    out: dict[str, str] = {}
    for node in ast.parse(MODULES[module].read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            out[node.name] = ast.dump(node.args) + ast.dump(ast.Module(body=body, type_ignores=[]))
    return out


def test_no_function_is_written_twice() -> None:
    """A helper two modules need lives once, on the layer (or engine floor) both may import: two copies drift
    apart (a session the importer writes would then diff otherwise than one the loop writes)."""
    where: dict[str, list[str]] = {}
    for module in MODULES:
        if module not in STANDALONE:
            for name, shape in module_functions(module).items():
                where.setdefault(shape, []).append(f"{module}.{name}")
    assert [names for names in where.values() if len(names) > 1] == []
    assert len(where) > 1000  # the check reads the package's functions


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
#: child imports its module alone, as a new interpreter would, and writes back the libraries it then has
#: loaded, or the last line of its error. Forking from one interpreter instead of starting one per module
#: saves an interpreter start per module (about a third of the time). Before forking, the parent loads what
#: no module's import can be told apart by, so no child pays for it again: the standard-library modules a
#: first child ("scout") holds after importing every module, and pydantic's own dependencies (PRELOADED),
#: none of which loads a library looked for (the parent checks that it holds none of them before it forks).
#: What a child proves is unchanged: its module's code and every beavertui module it needs run in it, in
#: the order its own imports ask for, and every library looked for that it holds, its import loaded. (A
#: standard-library submodule used at import time but never imported would pass here, as it does in a new
#: interpreter whenever some library it loads imported that submodule.) A child runs with the cyclic
#: garbage collector off: it exits after its one import, and what an import loads does not depend on when
#: unreachable cycles are freed (about a tenth of the probe's CPU time).
_FORK_PROBE = r"""
import gc, importlib, json, os, signal, sys, traceback

WATCHED = {"textual", "rich", "numpy", "pydantic"}
width, limit, preload, names = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4:]
results, running = {}, {}


def watched():
    return sorted({m.split(".")[0] for m in sys.modules} & WATCHED)


def fork(run, *args):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, json.dumps(run(*args)).encode())
        os._exit(0)
    os.close(w)
    return pid, r


def read(fd):
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def child(name):
    gc.disable()  # the child ends after one import: collecting its cycles (and the parent's) is wasted work
    signal.alarm(limit)  # a module whose import hangs is killed (SIGALRM) and reported so
    try:
        importlib.import_module(name)
        return watched()
    except BaseException as exc:
        return traceback.format_exception_only(type(exc), exc)[-1].strip()


def scout():
    signal.alarm(limit)
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    return [m for m in sys.modules if m.split(".")[0] in sys.stdlib_module_names and m != "__main__"]


pid, fd = fork(scout)
stdlib = json.loads(read(fd) or b"[]")
os.waitpid(pid, 0)
for name in [*stdlib, *filter(None, preload)]:
    try:
        importlib.import_module(name)
    except BaseException:
        pass  # not preloaded: a child that needs it imports it itself
assert watched() == [], f"preloading loaded {watched()}"


def reap():
    pid, status = os.wait()
    name, fd = running.pop(pid)
    data = read(fd)
    results[name] = json.loads(data) if data else f"exit {os.waitstatus_to_exitcode(status)}"


for name in names:
    while len(running) >= width:
        reap()
    pid, fd = fork(child, name)
    running[pid] = (name, fd)
while running:
    reap()
print(json.dumps(results))
"""

#: Libraries (none of them looked for) the probe's parent loads before forking: pydantic's dependencies.
PRELOADED = ("pydantic_core", "typing_extensions", "annotated_types", "typing_inspection")


def loaded_alone(modules: list[str], width: int = 4, limit_s: int = 120) -> dict[str, list[str] | str]:
    """For each module, imported alone in a fresh process: the watched libraries it loaded, or its error."""
    out = subprocess.run(
        [sys.executable, "-c", _FORK_PROBE, str(width), str(limit_s), ",".join(PRELOADED), *modules],
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


def test_metrics_loads_scipy_only_to_rank_and_never_scipy_stats() -> None:
    """``metrics`` over sessions with nothing to rank loads no scipy; ranking models without ties loads none
    either (the exact p-value is numpy's); the demo sessions (ranked with ties: the normal tail) load
    scipy.special, never the 0.7 s of scipy.stats."""
    code = (
        "import io, json, sys, contextlib\n"
        "from beavertui.cli import main\n"
        "def scipy(): return sorted(m for m in sys.modules if m in ('scipy', 'scipy.special', 'scipy.stats'))\n"
        "def metrics(path):\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        assert main(['metrics', path, '--json']) in (0, 1)\n"
        "    return [e['tau'] for e in json.loads(out.getvalue())['kendall_tau']]\n"
        "got = {'none': (metrics('tests/data/analysis'), scipy())}\n"
        "from beavertui.engine.metrics.kendall import kendall_tau_b\n"
        "got['untied'] = (kendall_tau_b([0.1, 0.5, 0.3, 0.9], [0.2, 0.4, 0.1, 0.8])[0], scipy())\n"
        "got['ties'] = (metrics('sessions/demo'), scipy())\n"
        "print(json.dumps(got))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["none"] == [[], []]  # nothing ranked, no scipy
    assert got["untied"] == [pytest.approx(2 / 3), []]  # ranked without ties, still no scipy
    taus, loaded = got["ties"]
    assert any(t is not None for t in taus)  # the demo sessions are ranked ...
    assert loaded == ["scipy", "scipy.special"]  # ... through scipy.special alone


def test_corpus_list_and_a_batch_load_no_numpy(tmp_path: Path) -> None:
    """Listing the corpus and running a batch compute no metric: neither loads numpy (nor scipy)."""
    recorded = ROOT / "tests" / "data" / "recorded"
    code = (
        "import contextlib, io, json, sys\n"
        "from beavertui.cli import main\n"
        "def heavy(): return sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy'})\n"
        "got = {}\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    assert main(['corpus', 'list']) == 0\n"
        "got['corpus list'] = (len(out.getvalue().splitlines()), heavy())\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['batch', '--corpus', {str(recorded)!r}, '--models', 'scripted:vec_scale_demo.toml',\n"
        f"               '--toolchain', 'recorded:' + {str(recorded / 'vec_scale.recordings.jsonl')!r},\n"
        f"               '--sessions-dir', {str(tmp_path)!r}, '--samples', '1', '--quiet'])\n"
        "got['batch'] = (rc, heavy())\n"
        "print(json.dumps(got))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["corpus list"][0] > 3 and got["corpus list"][1] == []
    assert got["batch"][0] in (0, 1) and got["batch"][1] == []
    assert len(list(tmp_path.rglob("*.jsonl"))) >= 1  # the batch did run its sessions


#: Libraries no test module imports at its top: every pytest worker imports every test module to collect
#: it, so one such import costs each worker its import time (scipy.stats 0.7 s of CPU, the OpenAI SDK 0.7 s,
#: Ray 0.5 s, scipy.special 0.2 s) whether or not it runs the tests that need it. A test imports them itself.
NOT_AT_COLLECTION = {"scipy", "ray", "openai"}


def collection_imports(path: Path) -> set[str]:
    """The libraries of NOT_AT_COLLECTION the module imports when it is collected: at its top level (under
    ``if``/``try`` too), ``import x``, ``from x import ...`` and ``pytest.importorskip("x")``."""
    found: set[str] = set()
    stack: list[ast.stmt] = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue  # runs when a test does, not at collection (its decorators aside: rare, not read)
        if isinstance(node, ast.ClassDef):
            stack.extend(node.body)
            continue
        if isinstance(node, ast.If | ast.Try):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            stack.extend(s for h in getattr(node, "handlers", []) for s in h.body)
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            names = [
                c.args[0].value
                for c in ast.walk(node)
                if isinstance(c, ast.Call)
                and ast.unparse(c.func).endswith("importorskip")
                and c.args
                and isinstance(c.args[0], ast.Constant)
                and isinstance(c.args[0].value, str)
            ]
        found |= {n.split(".")[0] for n in names} & NOT_AT_COLLECTION
    return found


def test_no_test_module_imports_a_heavy_library_at_collection() -> None:
    tests = ROOT / "tests"
    files = [p for p in sorted(tests.rglob("*.py")) if "data" not in p.relative_to(tests).parts]
    assert len(files) > 100
    heavy = {str(p.relative_to(ROOT)): sorted(got) for p in files if (got := collection_imports(p))}
    assert heavy == {}


def test_the_collection_check_sees_each_form(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import json\nimport scipy.stats\ntry:\n    import numpy\nexcept ImportError:\n"
        "    pass\nray = __import__('pytest').importorskip('ray')\n\ndef test_x():\n    import scipy\n"
        "class TestY:\n    from openai import OpenAI\n"
    )
    assert collection_imports(probe) == {"scipy", "openai", "ray"}
    probe.write_text("def test_x():\n    import scipy.stats\n    ray = pytest.importorskip('ray')\n")
    assert collection_imports(probe) == set()


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
