"""The engine reads no environment variable: settings come in as typed options, read once at the edge.

A command (or the service it calls) reads the user's settings from the environment (service/environment.py)
and hands the engine typed options (TimingConfig, LocalConfig, StageConfig) with documented defaults. This test
scans every module under beavertui/engine for a read of ``os.environ`` / ``os.getenv`` (also ``from os import
environ``) and fails on any that ``ALLOWED`` does not list, each with the reason it must stay; a listed read
that is gone fails too, so the list says what is true now.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "beavertui" / "engine"

#: The names whose use is a read of the environment.
READS = frozenset({"environ", "environb", "getenv", "getenvb"})

#: (module under beavertui/engine, the function or class.method that reads) -> why it must stay there.
ALLOWED: dict[tuple[str, str], str] = {
    # The platform's convention for where a user's cache lives (XDG base directories), asked by every
    # cache beneath it; it names no beavertui setting.
    ("paths.py", "cache_dir"): "XDG_CACHE_HOME",
    # Building a candidate's stage environment: beavertui's own environment passed through the sandbox's
    # allow-list (sandbox.inherited_env) is what a stage sees; no setting is read from it.
    ("stage/stages.py", "stage_env"): "the base of a stage's scrubbed environment",
    # The same for a corpus validation pinned to one GPU: the stage's base environment with that GPU's
    # CUDA_VISIBLE_DEVICES, scrubbed by the sandbox like any other.
    ("validation/validate.py", "_PinnedToolchain.stage_config"): "a pinned stage's base environment",
    # The minimal-fix search pinned to one GPU: as corpus validation's pinned stage above.
    ("validation/minimal_fixes.py", "_Pinned.stage_config"): "a pinned stage's base environment",
    # The baselines driver (PyTorch, a process of its own) starts from beavertui's environment with the
    # task's PYTHONPATH in front, as kernelbench's timing driver below.
    ("validation/baselines_record.py", "_env"): "the baselines driver's base environment",
    # kernelbench's timing driver is started with the environment the task's own eval compiles in, built
    # from beavertui's (then scrubbed by the sandbox).
    ("timing/kernelbench.py", "KernelbenchDriver.warm"): "the driver's base environment",
    # The timing driver runs as its own process (python -m), not inside beavertui: it applies its go's
    # environment to itself before CUDA starts.
    ("timing/kernelbench_driver.py", "_wait_for_go"): "a separate process setting its own environment",
    # Which GPUs this process sees is what the CUDA runtime of every child will see: a Ray worker sets it per
    # task, so it is read where the GPUs are listed, not carried in options.
    ("host/gpu.py", "_first_visible"): "CUDA_VISIBLE_DEVICES, the process's own GPU view",
    ("host/gpu.py", "visible_gpus"): "CUDA_VISIBLE_DEVICES, the process's own GPU view",
    # Where the CUDA toolkit is (CUDA_HOME, CUDA_PATH): the toolkit's own convention, as nvcc and torch read it.
    ("host/gpu.py", "cuda_root"): "CUDA_HOME / CUDA_PATH, the toolkit's convention",
    # The CA files of TLS (SSL_CERT_FILE, SSL_CERT_DIR): the HTTP library's own convention, read by it when it
    # makes a context; the shared context of the model clients is kept one per value, as the library would make it.
    ("models/openai_model.py", "shared_tls_context"): "SSL_CERT_FILE / SSL_CERT_DIR, the TLS convention",
    # Finding an executable on PATH, as the shell would.
    ("host/isolation.py", "_tool"): "PATH",
    # The machine-wide escape hatch BEAVERTUI_NAMESPACES=0 (docs/security.md) must reach every sandboxed
    # command, also those no command's options reach (the GPU probe kernel, the harness-proof build).
    ("host/sandbox.py", "start"): "BEAVERTUI_NAMESPACES, every sandboxed command",
    # The C compiler of the harness proof library, by the make convention (CC).
    ("judge/harness_proof.py", "_build"): "CC",
    # A model's key and where to reach it are read where the model is made, also on a Ray worker, so that the
    # key never travels in options or events (docs/security.md); the models file and the editor of the
    # human model come with the same resolution.
    ("models/openai_model.py", "OpenAIModel.__init__"): "OPENAI_BASE_URL and the key's variable",
    ("models/resolve.py", "models_file"): "BEAVERTUI_MODELS, resolved beside the key",
    ("models/resolve.py", "build_model"): "EDITOR of the human model",
}


def _reads(tree: ast.AST) -> list[tuple[str, int]]:
    """(qualified name of the enclosing function, line) of every environment read in ``tree``."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = [*scope, node.name]
        hit = (
            isinstance(node, ast.Attribute)
            and node.attr in READS
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ) or (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(alias.name in READS for alias in node.names)
        )
        if hit:
            found.append((".".join(scope) or "<module>", getattr(node, "lineno", 0)))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, [])
    return found


def engine_reads() -> dict[tuple[str, str], list[int]]:
    reads: dict[tuple[str, str], list[int]] = {}
    for path in sorted(ENGINE.rglob("*.py")):
        rel = path.relative_to(ENGINE).as_posix()
        for where, line in _reads(ast.parse(path.read_text(), str(path))):
            reads.setdefault((rel, where), []).append(line)
    return reads


def test_the_engine_reads_the_environment_only_where_listed() -> None:
    reads = engine_reads()
    unlisted = [
        f"beavertui/engine/{m}:{lines[0]} ({w})" for (m, w), lines in reads.items() if (m, w) not in ALLOWED
    ]
    assert not unlisted, (
        "the engine reads the environment here; read the setting in service/environment.py and pass it down "
        "as an option (or list it in ALLOWED with the reason it must stay): " + ", ".join(unlisted)
    )
    stale = sorted(f"{m} ({w})" for m, w in ALLOWED if (m, w) not in reads)
    assert not stale, f"ALLOWED lists reads that are gone: {stale}"


def test_the_scan_sees_every_form_of_a_read() -> None:
    source = (
        "import os\n"
        "from os import environ\n"
        "def a():\n    return os.environ.get('X')\n"
        "class B:\n    def c(self):\n        return os.getenv('Y')\n"
        "D = os.environ['Z']\n"
        "def e():\n    return os.path.join('a')\n"
    )
    assert [w for w, _ in _reads(ast.parse(source))] == ["<module>", "a", "B.c", "<module>"]


def test_the_settings_the_engine_used_to_read_are_read_at_the_edge() -> None:
    """The variables of timing and stages are read by service/environment.py, and no engine module names one."""
    from beavertui.service import environment

    for var in environment.VARIABLES:
        for path in ENGINE.rglob("*.py"):
            text = path.read_text()
            assert f'"{var}"' not in text and f"'{var}'" not in text, f"{path} names {var}"
