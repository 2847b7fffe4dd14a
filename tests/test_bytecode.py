"""tests/bytecode.py: the bytecode a parallel session makes before its workers start is the bytecode they
read, and the session's bytecode folder starts with the bytecode the installed packages came with."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, assertstate_key, get_cache_dir

from tests.bytecode import link_installed, warm


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    pkg, tests = tmp_path / "pkg", tmp_path / "tests"
    (tests / "data").mkdir(parents=True)
    pkg.mkdir()
    (pkg / "__init__.py").write_text("VALUE = 1\n")
    (tests / "helper.py").write_text("HELP = 2\n")
    (tests / "test_one.py").write_text("def test_x():\n    assert 1 + 1 == 2\n")
    (tests / "data" / "test_recorded.py").write_text("def test_y():\n    assert False\n")
    return pkg, tests


@pytest.mark.parametrize("processes", [1, 2])
def test_warm_writes_the_rewritten_test_module_and_the_bytecode_an_import_reads(
    tmp_path: Path, pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    pkg, tests = _tree(tmp_path)
    warm(pytestconfig, [pkg], [tests], processes)
    state = pytestconfig.stash[assertstate_key]
    test = tests / "test_one.py"
    code = _read_pyc(test, get_cache_dir(test) / ("test_one" + PYC_TAIL), state.trace)
    assert code is not None  # what pytest's import finds and takes instead of rewriting again
    (test_x,) = [c for c in code.co_consts if getattr(c, "co_name", None) == "test_x"]
    assert any(name.startswith("@py_assert") for name in test_x.co_varnames)  # the asserts rewritten
    for module in (pkg / "__init__.py", tests / "helper.py"):
        assert Path(importlib.util.cache_from_source(str(module))).is_file(), module
    skipped = tests / "data" / "test_recorded.py"  # under norecursedirs (tests/data): not collected, not made
    assert not (get_cache_dir(skipped) / ("test_recorded" + PYC_TAIL)).exists()
    assert not Path(importlib.util.cache_from_source(str(skipped))).exists()


def test_installed_bytecode_is_linked_where_a_prefix_folder_is_read(tmp_path: Path) -> None:
    prefix, source = str(tmp_path / "pyc"), Path(json.__file__)
    assert link_installed(prefix, [str(source.parent)]) > 0
    tag = sys.implementation.cache_tag
    beside = source.parent / "__pycache__" / f"__init__.{tag}.pyc"  # the bytecode installed with the library
    linked = Path(prefix + str(source.parent)) / beside.name
    assert linked.is_symlink() and linked.resolve() == beside.resolve()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = prefix
    probe = "import json.decoder, sys; print(sys.pycache_prefix)"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == prefix
    decoder = Path(prefix + str(source.parent)) / f"decoder.{tag}.pyc"
    assert decoder.is_symlink()  # read through the link: nothing compiled in its place
    assert decoder.resolve().parent == beside.parent
