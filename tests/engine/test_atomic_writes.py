"""Every output file beavertui writes whole is written atomically: the old file or the new one, never a part.

Before (e6f7b95), most writers wrote the target in place (``Path.write_text``, ``open(..., "w")``): a write
that failed midway (a full disk, a file size limit, a serializer raising) left a truncated ``export`` or
``metrics --output`` file where a whole one had been, and a cache writer left its fixed-name ``.tmp``
behind. Now every whole-file writer goes through engine/fileio.py (``atomic_file``, ``write_atomic``);
files that grow by lines append one whole line or none (``append_line``); session files keep their own
append writer and recovery. The first test reads the package's source and fails on any other write.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from beavertui.engine.bundled import demo_sessions
from beavertui.engine.fileio import append_line, atomic_file, write_atomic

PACKAGE = Path(__file__).resolve().parents[2] / "beavertui"

#: Writers that do not write an output file whole, each with why it may write directly: (module, function).
ALLOWED = {
    ("engine/fileio.py", "_atomic_file"): "the atomic writer itself",
    ("engine/fileio.py", "append_line"): "the whole-line appender itself",
    ("engine/session/store.py", "SessionWriter.__init__"): "session file: appended event by event",
    ("engine/session/store.py", "SessionWriter.reopen"): "session file: its valid prefix continued",
    ("engine/session/late.py", "append_timing"): "session file: late timings after its valid prefix",
    ("batch/job.py", "_end_last_line"): "session file recovery: a lost final newline put back",
    ("batch/rundir.py", "lock_run"): "the run's lock file, never read for content",
    ("engine/timing/native.py", "_locked"): "a lock file, never read for content",
    ("engine/host/reaper.py", "PidsCgroup.create"): "cgroup control files of the kernel, not files",
    ("engine/stage/stages.py", "prepare"): "a fresh work dir: copies and the candidate, read only after",
    ("engine/timing/native.py", "place_sources"): "timing sources copied into a work dir",
    ("engine/timing/reference.py", "adopt_reference_build"): "a built work dir moved whole to the cache",
    ("batch/cache.py", "CompileCache.get"): "a cached build copied into a fresh work dir",
    ("batch/cache.py", "CompileCache.put"): "files copied into a temporary folder renamed into place whole",
    ("engine/host/ceilings.py", "measure"): "a source in a temporary build folder",
    ("engine/judge/gpu_fault.py", "GpuProbe._built"): "the probe's source in a temporary folder",
    ("engine/judge/harness_proof.py", "_build"): "the proof library's source in a temporary folder",
    ("tui/live.py", "LiveScreen._open_editor"): "a temporary file handed to the user's editor",
    ("engine/toolchain/local.py", "LocalToolchain._ncu"): "a temporary file name for ncu's own CSV",
    (
        "engine/validation/baselines_record.py",
        "record",
    ): "drivers' admit and go signals in a temporary folder",
    ("engine/validation/baselines_record.py", "_start"): "a driver's log in a temporary folder",
}


def _mode(call: ast.Call, index: int) -> str | None:
    """The constant mode argument of an open call (positional ``index`` or ``mode=``), if any."""
    mode = call.args[index] if len(call.args) > index else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None


def _writing(mode: str | None) -> bool:
    return mode is not None and bool(set(mode) & set("wax+"))


def _write_call(call: ast.Call) -> str | None:
    """What ``call`` writes, when it can write a file: ``write_text``, ``open('w')``, ``os.open(O_CREAT)``..."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
    if name in ("write_text", "write_bytes"):
        return name
    if name == "open" and owner == "os":
        flags = {n.attr for n in ast.walk(call) if isinstance(n, ast.Attribute)}
        hit = flags & {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
        return f"os.open({'|'.join(sorted(hit))})" if hit else None
    if name in ("open", "fdopen"):  # open(p, mode), io.open, os.fdopen(fd, mode), Path.open(mode)
        path_method = isinstance(func, ast.Attribute) and owner not in ("io", "builtins", "os")
        mode = _mode(call, 0 if path_method else 1)
        return f"{name}({mode!r})" if _writing(mode) else None
    if name in ("mkstemp", "NamedTemporaryFile", "copy", "copy2", "copyfile", "copytree", "move"):
        return name if owner in ("tempfile", "shutil") else None
    return None


def _writes(tree: ast.AST) -> list[tuple[str, str, int]]:
    """(enclosing class and function names, what, line) of every call in ``tree`` that can write a file."""
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, f"{where}.{child.name}" if where else child.name)
                continue
            if isinstance(child, ast.Call) and (what := _write_call(child)):
                found.append((where, what, child.lineno))
            visit(child, where)

    visit(tree, "")
    return found


def _scan() -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        for where, what, line in _writes(ast.parse(path.read_text(encoding="utf-8"))):
            out.setdefault((rel, where), []).append(f"{what} at line {line}")
    return out


def test_no_whole_file_write_bypasses_the_atomic_writer() -> None:
    found = _scan()
    bypass = {f"{m}:{f}": calls for (m, f), calls in found.items() if (m, f) not in ALLOWED}
    assert not bypass, f"write through engine/fileio.py (atomic_file, write_atomic, append_line): {bypass}"
    stale = sorted(f"{m}:{f}" for (m, f) in ALLOWED if (m, f) not in found)
    assert not stale, f"allowed writers that no longer write: {stale}"


def test_the_scan_sees_each_kind_of_write() -> None:
    source = """
import os, shutil, tempfile
from pathlib import Path
def a(p): Path(p).write_text("x")
def b(p):
    with open(p, "w") as fh: fh.write("x")
def c(p): os.open(p, os.O_WRONLY | os.O_CREAT)
class K:
    def d(self, p): p.open("ab")
def e(p): shutil.copy2(p, p + "~")
def f(p): open(p).read(); os.open(p, os.O_RDONLY); Path(p).open()
"""
    seen = {(where, what.split("(")[0]) for where, what, _ in _writes(ast.parse(source))}
    assert seen == {
        ("a", "write_text"),
        ("b", "open"),
        ("c", "os.open"),
        ("K.d", "open"),
        ("e", "copy2"),
    }


# ------------------------------------------------------------------------------------ the writer itself


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_serializer_that_raises_midway_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old,whole\n")
    with pytest.raises(RuntimeError, match="row 3"), atomic_file(target) as fh:
        fh.write("new,part\n" * 1000)
        raise RuntimeError("row 3 cannot be written")
    assert target.read_text() == "old,whole\n"
    assert _left(tmp_path) == ["out.csv"]


def test_a_whole_write_replaces_and_keeps_the_files_mode(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("{}")
    target.chmod(0o640)
    write_atomic(target, '{"a": 1}\n')
    assert json.loads(target.read_text()) == {"a": 1}
    assert target.stat().st_mode & 0o777 == 0o640
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, b'{"b": 2}')
    assert link.is_symlink() and json.loads(target.read_text()) == {"b": 2}
    assert _left(tmp_path) == ["link.json", "run.json"]


def test_a_target_that_is_a_stream_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    """``-o /dev/stdout`` or a FIFO: a rename over it would put a regular file where a device or pipe was."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "through the pipe\n")
    reader.join(timeout=30)
    assert got == [b"through the pipe\n"] and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert _left(tmp_path) == ["pipe"]
    argv = ["export", str(demo_sessions()), "-o", "/dev/stdout"]
    done = subprocess.run(
        [sys.executable, "-m", "beavertui", *argv], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 17  # the 17 attempts, on the pipe /dev/stdout leads to


def _under_a_file_size_limit(limit: int, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a Python whose writes past ``limit`` bytes fail (EFBIG, a full disk for any user)."""
    prelude = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_write_past_a_full_disk_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "baseline.json"
    target.write_text('{"old": true}\n')
    code = f"from beavertui.engine.fileio import write_atomic\nwrite_atomic({str(target)!r}, 'x' * 100000)\n"
    done = _under_a_file_size_limit(4096, code)
    assert done.returncode != 0 and "File too large" in done.stderr
    assert target.read_text() == '{"old": true}\n'
    assert _left(tmp_path) == ["baseline.json"]


@pytest.mark.parametrize(
    "command",
    [["export", "{demo}", "--csv", "-o", "{out}"], ["export", "{demo}", "-o", "{out}"]],
    ids=["export-csv", "export-jsonl"],
)
def test_an_export_that_fails_midway_leaves_the_previous_export_whole(
    tmp_path: Path, command: list[str]
) -> None:
    """The product end to end: an export over a previous one, past a file size limit of 1,000 bytes (the
    export is about 4 KB). On e6f7b95 the previous file was truncated to a partial export."""
    out = tmp_path / "attempts.out"
    out.write_text("previous,export\n")
    argv = [a.format(demo=demo_sessions(), out=out) for a in command]
    done = _under_a_file_size_limit(1000, f"from beavertui.cli import main\nsys.exit(main({argv!r}))\n")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"beavertui: {out}: ")
    assert out.read_text() == "previous,export\n"
    assert _left(tmp_path) == ["attempts.out"]


def test_metrics_output_that_fails_midway_leaves_the_previous_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "metrics.json"
    out.write_text('{"previous": true}\n')
    argv = ["metrics", str(demo_sessions()), "--json", "-o", str(out)]
    done = _under_a_file_size_limit(200, f"from beavertui.cli import main\nsys.exit(main({argv!r}))\n")
    assert done.returncode == 2, done.stderr
    assert out.read_text() == '{"previous": true}\n'
    assert _left(tmp_path) == ["metrics.json"]


# --------------------------------------------------------------------------------- whole-line appends


def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path: Path) -> None:
    log = tmp_path / "recordings.jsonl"
    log.write_text('{"a": 1}\n{"b": ')  # a writer killed mid-line
    append_line(log, '{"c": 3}')
    assert [json.loads(x) for x in log.read_text().splitlines()] == [{"a": 1}, {"c": 3}]


def test_an_append_past_a_full_disk_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    log = tmp_path / "recordings.jsonl"
    log.write_text('{"a": 1}\n')
    code = f"from beavertui.engine.fileio import append_line\nappend_line({str(log)!r}, 'y' * 100000)\n"
    done = _under_a_file_size_limit(4096, code)
    assert done.returncode != 0 and "File too large" in done.stderr
    assert log.read_text() == '{"a": 1}\n'
