"""A folder tree is walked by one iterative walk (``fileio.walk``), never by a recursive one.

Before, the recorded toolchain (``--toolchain recorded:DIR``) and ``attribute --run`` /
``--random-feedback`` listed a folder's sessions with ``Path.rglob``, which recurses once a folder: a tree
deeper than Python's recursion limit (1,000) raised RecursionError, a traceback. The harness hash, the
task loader, the build cache and a resume's clean-up used ``os.walk`` (recursive on Python 3.11) and
``rglob``. The first test reads the package's source and fails on any recursive walk outside the one walk.
"""

from __future__ import annotations

import ast
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import MAX_WALK_DEPTH, remove_tree, walk
from beavertui.engine.toolchain.recorded import RecordedToolchain

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "beavertui"
H200 = ROOT / "tests" / "data" / "h200_batch_run"
PROTO = "scripted_alternate/iterative-K5-L3-H2-T0-p0.7-bd892733"
RECORDED = ROOT / "tests" / "data" / "recorded"

#: Recursive walks allowed outside ``fileio.walk`` and ``fileio.remove_tree``, each with why:
#: (module, function) -> reason. Each is a copy of a tree whose depth is bounded before it is copied.
ALLOWED: dict[tuple[str, str], str] = {
    ("engine/stage/stages.py", "prepare"): "copies the task's testbench and shared folders before any "
    "candidate runs; a task folder deeper than 64 folders is refused when it loads",
    ("engine/timing/native.py", "place_sources"): "copies a timing driver's folders of the corpus, never "
    "a folder a candidate wrote",
    ("batch/cache.py", "CompileCache.get"): "copies a cached build, whose files the walk listed (at most "
    "64 folders deep)",
}


def _recursive_walks(tree: ast.AST) -> Iterator[tuple[str, int, str]]:
    """(function, line, call) of every recursive walk in a module."""
    scopes: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            scopes.append((node.lineno, node.end_lineno or node.lineno, node.name))

    def scope(line: int) -> str:
        inner = [s for s in scopes if s[0] <= line <= s[1]]
        return ".".join(name for _a, _b, name in sorted(inner)) or "<module>"

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        owner = node.func.value
        owner_name = owner.id if isinstance(owner, ast.Name) else None
        text = ast.unparse(node.func)
        walks = name in ("walk", "fwalk") and owner_name == "os"
        copies = name in ("rmtree", "copytree") and owner_name == "shutil"  # recursive on Python 3.11
        if name == "rglob" or walks or copies:
            yield scope(node.lineno), node.lineno, text
        elif name in ("glob", "iglob"):
            pattern = node.args[0] if node.args else None
            recursive = any(k.arg == "recursive" for k in node.keywords)
            if recursive or (isinstance(pattern, ast.Constant) and "**" in str(pattern.value)):
                yield scope(node.lineno), node.lineno, text
            elif pattern is not None and not isinstance(pattern, ast.Constant | ast.JoinedStr):
                yield scope(node.lineno), node.lineno, f"{text} (a pattern not known here)"


def test_no_module_walks_a_tree_recursively() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        source = path.read_text(encoding="utf-8")
        assert "from shutil import" not in source and "from os import walk" not in source, rel
        for function, line, call in _recursive_walks(ast.parse(source)):
            if (rel, function) not in ALLOWED:
                found.append(f"{rel}:{line} {function}: {call}")
    assert not found, "walk with fileio.walk, remove with fileio.remove_tree:\n" + "\n".join(found)


def test_the_source_scan_finds_each_recursive_walk() -> None:
    """The scan is not blind: each form it forbids is found in a sample."""
    sample = (
        "def a(p):\n    return list(p.rglob('*.jsonl'))\n"
        "def b(p):\n    import os\n    return list(os.walk(p))\n"
        "def c(p):\n    return p.glob('**/*.cu')\n"
        "def d(p):\n    import glob\n    return glob.glob(p, recursive=True)\n"
        "def e(p):\n    return p.glob('*.cu')\n"
        "def f(p):\n    import shutil\n    shutil.rmtree(p, ignore_errors=True)\n"
    )
    assert sorted(f for f, _line, _call in _recursive_walks(ast.parse(sample))) == ["a", "b", "c", "d", "f"]


def _depth(tree: Path, n: int) -> Path:
    return Path(str(tree) + "/d" * n)


def test_the_walk_is_iterative_bounded_and_says_what_it_left(deep_tree: tuple[Path, Path]) -> None:
    tree, bottom = deep_tree
    (tree / "top.txt").write_text("x")
    (_depth(tree, MAX_WALK_DEPTH) / "deepest_read.txt").write_text("x")
    (bottom / "bottom.txt").write_text("x")
    (tree / "link").symlink_to(bottom, target_is_directory=True)
    left: list[str] = []
    names = [p.name for p in walk(tree, left_out=left)]
    assert names == ["link", "top.txt", "deepest_read.txt"]  # a link is listed, never followed
    too_deep = _depth(tree, MAX_WALK_DEPTH + 1)
    assert left == [f"{too_deep}: folder not read: more than {MAX_WALK_DEPTH} folders below {tree}"]
    assert [p.name for p in walk(tree, enter=lambda d: d.name != "d")] == ["link", "top.txt"]


def test_a_recordings_folder_too_deep_is_refused_in_one_line(deep_tree: tuple[Path, Path]) -> None:
    tree, bottom = deep_tree
    session = H200 / PROTO / "scan_01__s0.jsonl"
    shutil.copy(session, tree / session.name)
    shutil.copy(session, bottom / session.name)
    with pytest.raises(BeaverError) as err:
        RecordedToolchain.load(tree)  # was RecursionError
    too_deep = _depth(tree, MAX_WALK_DEPTH + 1)
    assert str(err.value) == (
        f"{tree}: recordings folder not read whole: {too_deep}: folder not read: "
        f"more than {MAX_WALK_DEPTH} folders below {tree}"
    )


def test_a_recordings_folder_is_read_as_every_reader_reads_a_run(tmp_path: Path) -> None:
    """Sessions found as metrics finds them: at any depth within the bound."""
    planning = ROOT / "tests" / "data" / "planning" / "sessions"
    whole = RecordedToolchain.load(planning)
    assert len(whole.recordings) > 0
    run = tmp_path / "run"
    shutil.copytree(planning, _depth(run, MAX_WALK_DEPTH))
    assert RecordedToolchain.load(run).recordings == whole.recordings


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_attribute_walks_a_deep_run_and_says_what_it_left(
    deep_tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    tree, bottom = deep_tree
    shutil.copy(H200 / PROTO / "scan_01__s0.jsonl", bottom / "scan_01__s0.jsonl")
    too_deep = _depth(tree, MAX_WALK_DEPTH + 1)
    said = f"beavertui: left out {too_deep}: folder not read: more than {MAX_WALK_DEPTH} folders below {tree}"
    # --run: was RecursionError; now the folder left out is said, then why there is nothing to branch from
    code, err = _cli(capsys, "attribute", "--run", str(tree), "--components", "plan")
    assert code == 2, err
    assert err.splitlines() == [said, f"beavertui: {tree}: no session with a failed step to branch from"]
    # --random-feedback: was RecursionError too
    session = H200 / PROTO / "scan_01__s0.jsonl"
    code, err = _cli(capsys, "attribute", str(session), "--at", "1", "--random-feedback", str(tree))
    assert code == 2, err
    assert err.splitlines() == [
        said,
        f"beavertui: --random-feedback {tree}: no judged, failed attempt to draw from",
    ]


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path: Path) -> None:
    """A work dir a candidate filled with 1,100 nested folders, files, a link out and a FIFO: removed whole
    (shutil.rmtree raised RecursionError and left it), the link's target untouched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    work = tmp_path / "work"
    work.mkdir()
    bottom = str(work)
    for i in range(1100):
        bottom += "/d"
        os.mkdir(bottom)
        if i % 100 == 0:
            Path(bottom, "f.o").write_text("x")
    os.symlink(outside, Path(bottom, "out"), target_is_directory=True)
    os.mkfifo(Path(bottom, "pipe"))
    assert remove_tree(work) and not work.exists()
    assert (outside / "keep.txt").read_text() == "x"
    assert remove_tree(work)  # nothing there: nothing to do
    os.symlink(outside, work)
    assert remove_tree(work) and not os.path.lexists(work) and outside.is_dir()  # a link is unlinked


def test_a_tree_past_the_length_of_a_path_is_removed(tmp_path: Path) -> None:
    """Made by a process that went down folder by folder: no path names its bottom (over 4,096 bytes)."""
    work = tmp_path / "work"
    work.mkdir()
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    name = "d" * 200
    try:
        for _ in range(30):  # 30 x 201 bytes: past PATH_MAX
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    assert remove_tree(work) and not work.exists()
