"""Shared fixtures. GPU tests carry the ``gpu`` marker and are skipped where no NVIDIA GPU is visible."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


@cache
def gpu_present() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject.toml's addopts) starts one and a half workers a core, rounded up: three on the
    two-core CI machine. The suite's tests spend about a quarter of their time waiting (for a child's time
    limit, a stopped process, a browser, a socket), so a worker a core leaves the cores idle that long: on
    the 2-core development machine the whole suite took 248 s with two workers, 220 s with three, 216 s with four
    (docs/performance.md). PYTEST_XDIST_AUTO_NUM_WORKERS still decides where it is set (xdist reads it)."""

    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + (cores + 1) // 2


#: Where the Python processes of this test session keep their bytecode, when the environment asks for none
#: to be written beside the sources (PYTHONDONTWRITEBYTECODE): a folder of the session, removed at its end.
_PYC_KEY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    _bytecode_in_a_session_folder(config)
    _bytecode_before_the_workers(config)


def _bytecode_in_a_session_folder(config: pytest.Config) -> None:
    """With PYTHONDONTWRITEBYTECODE set, every Python process the suite starts (the test workers, each
    ``python -m beavertui`` a test runs, each child of the import probe) would compile every module it
    imports from source again. The session instead keeps the bytecode in a temporary folder of its own
    (PYTHONPYCACHEPREFIX), so each module is compiled once a session, and nothing is written beside the
    sources. Set in the first process, before the workers start, so that they and their children share it.
    Python reads no bytecode from beside the sources then, so the folder starts with links to the bytecode
    the standard library and the installed packages came with (tests/bytecode.py)."""
    import sys
    import tempfile

    from tests.bytecode import link_installed

    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    # in memory where the machine has a tmpfs: the links below cost 0.7 s of CPU there, 6.8 s on ext4 /tmp
    shm = "/dev/shm"
    memory = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    folder = tempfile.mkdtemp(prefix="beavertui-tests-pyc-", dir=memory)
    config.stash[_PYC_KEY] = folder
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = folder
    sys.pycache_prefix = folder
    sys.dont_write_bytecode = False
    link_installed(folder)


def _bytecode_before_the_workers(config: pytest.Config) -> None:
    """In the first process of a parallel run, before its workers start: the bytecode of beavertui and of the
    selected test folders, the test modules rewritten as pytest imports them, made once, a share a core,
    instead of by every worker at once (tests/bytecode.py)."""
    from tests.bytecode import warm

    workers = len(getattr(config.option, "tx", None) or [])
    if workers < 2 or hasattr(config, "workerinput") or config.getoption("collectonly"):
        return
    selected = [config.invocation_params.dir / arg.split("::")[0] for arg in config.args]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    warm(config, [ROOT / "beavertui"], [p.resolve() for p in selected if p.exists()], min(workers, cores))


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_PYC_KEY, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.prebuild import run_last

    run_last(items)
    if gpu_present():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU visible (nvidia-smi -L)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture(autouse=True, scope="session")
def _reply_cache_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Batches under test store model replies in a folder of the test session, never in the user's cache."""

    os.environ["BEAVERTUI_REPLY_CACHE"] = str(tmp_path_factory.mktemp("reply-cache"))


def extract_run(archive: Path, into: Path, folder: str = "run") -> Path:
    """A recorded run directory packed as ``folder/`` (``run/``) in a tar archive under tests/data or
    docs/data, unpacked into ``into``."""
    import tarfile

    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / folder


def metrics_json(run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    """``beavertui metrics RUN --json`` through the real CLI: the document and what it said on stderr."""
    import json

    from beavertui.cli import main

    assert main(["metrics", str(run), "--json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def correct_rows(run: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The correct attempts of ``beavertui export RUN`` (the attempts table, one JSON object a line)."""
    import json

    from beavertui.cli import main

    assert main(["export", str(run)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    return [r for r in rows if r["correct"]]


@pytest.fixture(autouse=True, scope="session")
def _prebuild_in_the_background(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The nvcc builds of the modules that declare them (tests/prebuild.py) start with the session."""
    from tests.prebuild import start_selected

    background = start_selected(request.session.items, tmp_path_factory)
    yield
    if background is not None:
        background.stop()


@pytest.fixture
def deep_tree(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A chain of 1,100 folders (deeper than the recursion limit of 1,000): (its top, its bottom). Removed
    bottom up by hand, not by the walks under test."""
    tree = tmp_path / "deep"
    tree.mkdir()
    bottom = str(tree)
    for _ in range(1100):
        bottom += "/d"
        os.mkdir(bottom)  # one at a time: Path.mkdir(parents=True) recurses too
    yield tree, Path(bottom)
    folder = bottom  # removed bottom up: pytest's own clean-up of old temporary folders recurses
    while folder != str(tree):
        for entry in os.scandir(folder):
            if not entry.is_dir(follow_symlinks=False):
                os.remove(entry.path)
        os.rmdir(folder)
        folder = os.path.dirname(folder)
