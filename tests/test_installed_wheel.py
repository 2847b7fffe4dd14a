"""beavertui as pip installs it: a wheel built from this checkout, in a fresh virtual environment outside
the repository, run from another folder, finds its bundled corpus and demo sessions.

The environment sees the dependencies where the interpreter running the tests finds them (its own
site-packages, a virtual environment's included; no download), after its own site-packages, so beavertui
itself is the wheel's copy: the test checks where it is imported from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_works_from_any_folder(tmp_path: Path) -> None:
    wheels, venv, elsewhere = tmp_path / "whl", tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BEAVERTUI_CORPUS", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # built from a copy: setuptools builds in the source tree (build/, *.egg-info), and copies of the suite
    # running at once in one checkout removed each other's bundled corpus halfway through a build
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, source / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.o", ".*", "*.egg-info", "build")
    for name in ("beavertui", "corpus", "sessions/demo"):
        shutil.copytree(ROOT / name, source / name, ignore=skip)
    built = _run(
        [sys.executable, "-m", "pip", "wheel", str(source), "-w", str(wheels), "--no-deps", "-q"],
        tmp_path, env, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("beavertui-*.whl")
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    # the dependencies: the folders of site-packages of the interpreter running the tests, listed after the
    # new environment's own (``--system-site-packages`` would reach the base interpreter's, which holds none
    # of them when the tests run inside a virtual environment)
    own = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path, env)
    assert own.returncode == 0, own.stderr
    outer = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    assert outer, sys.path
    (Path(own.stdout.strip()) / "_tested_with.pth").write_text("".join(f"{p}\n" for p in outer))
    put = _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        tmp_path, env,
    )  # fmt: skip
    assert put.returncode == 0, put.stderr
    where = _run([str(python), "-c", "import beavertui; print(beavertui.__file__)"], elsewhere, env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout
    exe = str(venv / "bin" / "beavertui")
    listed = _run([exe, "corpus", "list"], elsewhere, {**env, "COLUMNS": "300"})
    assert listed.returncode == 0, listed.stderr
    first = listed.stdout.splitlines()[0]
    assert first.startswith(str(venv)) and ": 41 tasks" in first, first
    assert "transpose_03" in listed.stdout
    browsed = _run([exe], elsewhere, env)  # no folder: the demo sessions, as plain lines when piped
    assert browsed.returncode == 0, browsed.stderr
    rows = [ln.split("\t") for ln in browsed.stdout.splitlines()]
    assert len(rows) == 6 and all(r[-1].startswith(str(venv)) for r in rows)
    pair = [r[-1] for r in rows if r[0] == "transpose_00"]
    assert len(pair) == 2  # two sessions of one task, for compare
    compared = _run([exe, "compare", *pair], elsewhere, env)
    assert compared.returncode == 0 and "PASSED" in compared.stdout, compared.stderr
    dry = _run(
        [exe, "batch", "--models", "scripted:@reference", "--tasks", "scan_*", "--dry-run", "--toolchain", "demo"],
        elsewhere, env,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "tasks (3): scan_00, scan_01, scan_02" in dry.stdout and not (elsewhere / "sessions").exists()
    # the release's verdicts on the H200 and the H100 ship as package data (engine/corpus/verdicts.py known_set)
    known = _run(
        [str(python), "-c", "from beavertui.engine.corpus import verdicts; "
         "print(len(verdicts.known_set('nvidia_h200_sm_90_cuda_13_0')), "
         "len(verdicts.known_set('nvidia_h100_80gb_hbm3_sm_90_cuda_13_0')))"],
        elsewhere, env,
    )  # fmt: skip
    assert known.returncode == 0 and known.stdout.split() == ["208", "64"], known.stderr
    # no key, no GPU: the demos run on the outcomes recorded with them, shipped in the wheel
    keyless = {k: v for k, v in env.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    live = _run([exe, "live", "--demo", "--headless"], elsewhere, keyless)
    assert live.returncode == 0 and "end passed after 3 iterations" in live.stdout, live.stderr
    assert len(list((elsewhere / "sessions" / "live").glob("transpose_00-*.jsonl"))) == 1
    batch = _run([exe, "batch", "--demo", "--run-id", "d", "--quiet"], elsewhere, keyless)
    assert batch.returncode == 0 and "5/5 sessions" in batch.stderr, batch.stderr
    metrics = _run([exe, "metrics", "sessions/d", "--format", "csv", "--table", "main"], elsewhere, keyless)
    assert metrics.returncode == 0 and "scripted:@demo" in metrics.stdout, metrics.stderr
    page = _run([exe, "export", "demo:degenerate_repair", "--html", "-o", "d.html"], elsewhere, keyless)
    assert page.returncode == 0 and (elsewhere / "d.html").stat().st_size > 10_000, page.stderr
    nokey = _run([exe, "batch", "--models", "some-model"], tmp_path, keyless)
    assert nokey.returncode == 2 and "OPENAI_API_KEY" in nokey.stderr and not (tmp_path / "sessions").exists()
