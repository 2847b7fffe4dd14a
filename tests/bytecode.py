"""Bytecode made once for a test session, before its workers start (tests/conftest.py calls these).

The workers of a parallel run start together and each imports the whole suite to collect it: with no
bytecode yet, each one rewrote the asserts of every test module and compiled every module of beavertui
itself (about 14 s of CPU a worker on the 2-core development machine, against 4.5 s with the bytecode
there). ``warm`` makes that bytecode once in the first process, a share of the files for each core, where
the workers then read it; what it writes is what a worker would have written (pytest's rewritten test
modules, Python's own bytecode), so a worker that finds a file of it stale makes its own, as before.

Under ``PYTHONPYCACHEPREFIX`` Python reads bytecode only from that folder, never from the ``__pycache__``
beside a source: with the session's new, empty folder, each process compiled again the standard library and
every installed package it imported (numpy, pydantic, textual, Ray in each of a cluster's processes).
``link_installed`` links the bytecode the interpreter and its packages were installed with into the folder
instead, where Python looks for it; a file Python finds stale it replaces with its own (the link, never its
target).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import py_compile
import sys
import sysconfig
from pathlib import Path

import pytest


def link_installed(prefix: str, roots: list[str] | None = None) -> int:
    """Link the bytecode beside the sources under ``roots`` (the standard library's and the installed
    packages' folders) into ``prefix``, at the path Python reads it from there; the number of links made."""
    suffix = f".{sys.implementation.cache_tag}.pyc"  # not the optimised .opt-N.pyc
    if roots is None:
        roots = sorted({sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")})
    made = 0
    for top in roots:
        for folder, dirs, files in os.walk(top):
            if os.path.basename(folder) != "__pycache__":
                continue
            dirs[:] = []
            pycs = [f for f in files if f.endswith(suffix) and f.count(".") == 2]
            if not pycs:
                continue
            dest = prefix + os.path.dirname(folder)
            os.makedirs(dest, exist_ok=True)
            for name in pycs:
                try:
                    os.symlink(os.path.join(folder, name), os.path.join(dest, name))
                except FileExistsError:
                    continue
                made += 1
    return made


def _sources(config: pytest.Config, root: Path) -> list[Path]:
    """The Python files under ``root`` (or ``root`` itself), leaving out the folders pytest does not collect
    (``norecursedirs``, matched as pytest matches them: tests/data holds the sources of recorded tasks)."""
    if root.is_file():
        return [root] if root.suffix == ".py" else []
    patterns = [pat if os.sep not in pat else f"*{os.sep}{pat}" for pat in config.getini("norecursedirs")]
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if not any(
                fnmatch.fnmatch(os.path.join(folder, d) if os.sep in pat else d, pat) for pat in patterns
            )
        ]
        out += [Path(folder, f) for f in files if f.endswith(".py")]
    return out


def _is_test_file(config: pytest.Config, path: Path) -> bool:
    """Whether pytest rewrites ``path`` when it imports it: a test module (``python_files``) or a conftest.py."""
    return any(fnmatch.fnmatch(path.name, pat) for pat in [*config.getini("python_files"), "conftest.py"])


def _fresh(fn: Path) -> bool:
    """Whether Python's bytecode of ``fn`` is there and up to date (its header holds the source's time and
    size), as the import system checks it."""
    try:
        with open(importlib.util.cache_from_source(str(fn)), "rb") as f:
            head = f.read(16)
        st = fn.stat()
    except OSError:
        return False
    return head[:8] == importlib.util.MAGIC_NUMBER + bytes(4) and head[8:16] == (
        (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    )


def _make(config: pytest.Config, files: list[Path], tests: set[Path]) -> None:
    """Bytecode for each file: pytest's rewritten module for a test file, Python's own for the rest."""
    from _pytest.assertion.rewrite import (
        PYC_TAIL,
        _read_pyc,
        _rewrite_test,
        _write_pyc,
        assertstate_key,
        get_cache_dir,
        try_makedirs,
    )

    state = config.stash[assertstate_key]
    for fn in files:
        try:
            if fn not in tests:
                if not _fresh(fn):
                    py_compile.compile(str(fn), doraise=True)
                continue
            folder = get_cache_dir(fn)
            pyc = folder / (fn.name[:-3] + PYC_TAIL)
            if _read_pyc(fn, pyc, state.trace) is None and try_makedirs(folder):
                source_stat, co = _rewrite_test(fn, config)
                _write_pyc(state, co, source_stat, pyc)
        except Exception:  # a file that does not compile is reported where it is imported, as before
            continue


def warm(config: pytest.Config, packages: list[Path], test_roots: list[Path], processes: int) -> None:
    """Write the bytecode of every module of ``packages`` and of the test folders, the rewritten test
    modules included, in ``processes`` processes forked from this one."""
    if config.getoption("assertmode") != "rewrite" or sys.dont_write_bytecode or not hasattr(os, "fork"):
        return
    files = sorted({p for root in [*packages, *test_roots] for p in _sources(config, root)})
    tests = {p for root in test_roots for p in files if p.is_relative_to(root) and _is_test_file(config, p)}
    files.sort(key=lambda p: -p.stat().st_size)  # dealt out largest first, so the shares come out even
    if processes <= 1:
        _make(config, files, tests)
        return
    pids = []
    for i in range(processes):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _make(config, files[i::processes], tests)
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
