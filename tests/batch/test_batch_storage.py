"""A full disk, a read-only output folder and a corrupt compile cache: one clear line each, nothing finished lost.

The full disk is real where the kernel lets this test mount a small tmpfs in its own mount namespace
(``unshare -m``, as root); everywhere else a file size limit (RLIMIT_FSIZE, which fails writes with EFBIG
and works for any user) stands in for it. A read-only folder is a read-only bind mount in a mount
namespace (root ignores file modes), or a folder without write permission for other users; a folder
below a regular file fails for everyone. Each case checks the exit code (2), that stderr holds exactly
one error line and no traceback, and that a resume with room again ends with exactly the attempts of an
uninterrupted run.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from beavertui.batch.cache import CompileCache
from beavertui.engine.session.events import StageResult
from beavertui.engine.session.store import read_session
from tests.batch.test_batch_kill_resume import CORPUS, DEMO, RECORDED, attempts_of, flaky_script
from tests.cli_in_process import run_cli

#: The batch as a process: where the test limits or mounts what the process sees (a file size limit, a small
#: or read-only file system). The runs around it (reference, resume) go through ``run_cli`` in this process.
PY = [sys.executable, "-m", "beavertui", "batch"]


def batch_args(models: list[str], samples: int) -> list[str]:
    return [
        "--corpus", str(CORPUS), "--toolchain", RECORDED, "--models", *models, "--protocol", "legacy-feedback",
        "--samples", str(samples), "--jobs", "2", "--quiet",
    ]  # fmt: skip


@cache
def namespaces() -> bool:
    """Whether this process may mount in a mount namespace of its own (root, unshare available)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && mount -o remount,ro,bind $d $d"
    out = subprocess.run(["unshare", "-m", "sh", "-c", probe], capture_output=True, timeout=30)
    return out.returncode == 0


def error_lines(stderr: str) -> list[str]:
    """The lines other than the start and summary lines every batch prints."""
    assert "Traceback" not in stderr, stderr
    return [ln for ln in stderr.splitlines() if not ln.startswith("beavertui: run ")]


def check_kept_and_resume(run: Path, ref: Path) -> tuple[int, int]:
    """Every session left behind is a readable prefix; a resume with room finishes exactly as ``ref``."""
    want, want_ends = attempts_of(ref)
    ended = 0
    for p in run.rglob("*__s*.jsonl"):
        header, events, _problem = read_session(p)
        if header is not None and events and events[-1].kind == "end":
            ended += 1
    cut = len(want_ends) - ended  # cut, or not started yet
    out = run_cli("batch", "--resume", run, "--quiet")
    assert out.returncode == 3, out.stderr  # as ``ref``: the flaky model's sessions have no verdict
    got, _ = attempts_of(run)
    assert got == want
    return ended, cut


def reference(tmp: Path, models: list[str], samples: int) -> Path:
    out = run_cli("batch", *batch_args(models, samples), "--sessions-dir", tmp, "--run-id", "ref")
    assert out.returncode == 3, out.stderr  # the flaky model's sessions end by its failure, with no verdict
    return tmp / "ref"


# ------------------------------------------------------------------------------------------- full disk


@pytest.mark.skipif(not namespaces(), reason="needs root and unshare -m to mount a small tmpfs")
def test_a_disk_that_fills_up_mid_run_stops_in_one_line_and_resumes_losing_nothing(tmp_path: Path) -> None:
    models = [DEMO, "scripted:@alternate", flaky_script(tmp_path)]
    ref = reference(tmp_path, models, 10)
    mnt, copy = tmp_path / "mnt", tmp_path / "copy"
    mnt.mkdir()
    inner = " ".join(
        [*map(_q, PY), *map(_q, batch_args(models, 10)), "--sessions-dir", _q(str(mnt)), "--run-id", "r"]
    )
    script = f"mount -t tmpfs -o size=600k tmpfs {_q(str(mnt))} && {inner}; rc=$?; cp -a {_q(str(mnt / 'r'))} {_q(str(copy))}; exit $rc"
    out = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert line.startswith("beavertui: cannot write ") and "no space left on the device" in line
    assert f"--resume {mnt / 'r'}" in line
    ended, cut = check_kept_and_resume(copy, ref)
    assert ended > 0
    print(
        f"\nreliability: full disk (600 KiB tmpfs): exit 2 with one line; {ended} finished sessions "
        f"kept intact, {cut} cut or not started completed by the resume, which ended with the "
        "attempts of an uninterrupted run"
    )


def _q(s: str) -> str:
    import shlex

    return shlex.quote(s)


def _fsize_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_mid_run_stops_in_one_line_and_resumes_losing_nothing(tmp_path: Path) -> None:
    # the flaky model's sessions stay below the limit, the demo's grow past it
    models = [flaky_script(tmp_path), DEMO]
    ref = reference(tmp_path, models, 4)
    out = subprocess.run(
        [*PY, *batch_args(models, 4), "--sessions-dir", str(tmp_path), "--run-id", "r"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_fsize_limit(12_000),
    )
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert line.startswith("beavertui: cannot write ") and "file too large" in line and "--resume" in line
    ended, cut = check_kept_and_resume(tmp_path / "r", ref)
    assert ended > 0 and cut > 0
    print(
        f"\nreliability: file size limit (12 000 B, EFBIG): exit 2 with one line; {ended} finished "
        f"sessions kept intact, {cut} cut or not started completed by the resume, which matched an "
        "uninterrupted run"
    )


# ------------------------------------------------------------------------------------ read-only folder


def test_an_output_folder_below_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    out = run_cli("batch", *batch_args([DEMO], 1), "--sessions-dir", tmp_path / "file" / "sessions")
    assert out.returncode == 2
    (line,) = error_lines(out.stderr)
    assert line.startswith("beavertui: cannot write ") and "is a file, not a folder" in line


def _read_only(cmd: list[str], folder: Path) -> list[str]:
    """``cmd`` run with ``folder`` read-only for it."""
    if namespaces():
        f = _q(str(folder))
        return ["unshare", "-m", "sh", "-c", f"mount --bind {f} {f} && mount -o remount,ro,bind {f} {f} && exec {' '.join(map(_q, cmd))}"]  # fmt: skip
    if os.geteuid() != 0:
        for p in [folder, *folder.rglob("*")]:
            if p.is_dir():
                p.chmod(0o555)
        return cmd
    pytest.skip("root without mount namespaces: no way to make a folder read-only for this process")


@pytest.mark.parametrize("resume", [False, True], ids=["new-run", "resume"])
def test_a_read_only_output_folder_is_one_line_and_changes_nothing(tmp_path: Path, resume: bool) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    if resume:
        first = run_cli("batch", *batch_args([DEMO], 2), "--sessions-dir", sessions, "--run-id", "r")
        assert first.returncode == 0, first.stderr
        cmd = [*PY, "--resume", str(sessions / "r"), "--quiet"]
    else:
        cmd = [*PY, *batch_args([DEMO], 2), "--sessions-dir", str(sessions), "--run-id", "r"]
    before = {p: p.read_bytes() for p in sessions.rglob("*") if p.is_file()}
    out = subprocess.run(_read_only(cmd, sessions), capture_output=True, text=True, timeout=60)
    for p in [sessions, *sessions.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755)
    assert out.returncode == 2, out.stderr
    (line,) = error_lines(out.stderr)
    assert line.startswith("beavertui: cannot write ")
    assert "read-only" in line or "permission denied" in line
    assert {p: p.read_bytes() for p in sessions.rglob("*") if p.is_file()} == before


# --------------------------------------------------------------------------------------- corrupt cache


def _stored(cache: CompileCache, tmp: Path, key: str) -> Path:
    work = tmp / f"work-{key[:4]}"
    work.mkdir(exist_ok=True)
    (work / "test.out").write_bytes(os.urandom(4096))
    cache.put(key, StageResult(stage="build", command="nvcc", rc=0, log="ok"), work, ["test.out"])
    return cache.root / key[:2] / key


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "result-garbage": lambda e: (e / "result.json").write_bytes(b"\xff\x00{not json"),
    "result-truncated": lambda e: (e / "result.json").write_text((e / "result.json").read_text()[:10]),
    "result-wrong-schema": lambda e: (e / "result.json").write_text('{"stage": "lunch", "rc": "x"}'),
    "binary-truncated": lambda e: (e / "files" / "test.out").write_bytes(b"\x7fELF"),
    "binary-flipped": lambda e: (e / "files" / "test.out").write_bytes(
        bytes([(e / "files" / "test.out").read_bytes()[0] ^ 1]) + (e / "files" / "test.out").read_bytes()[1:]
    ),
    "binary-missing": lambda e: (e / "files" / "test.out").unlink(),
    "listing-garbage": lambda e: (e / "files.json").write_text("[1, 2"),
}


@pytest.mark.parametrize("damage", list(CORRUPTIONS))
def test_a_corrupt_cache_entry_is_removed_counted_and_built_again(tmp_path: Path, damage: str) -> None:
    cache = CompileCache(tmp_path / "cache")
    key = "ab" + "0" * 62
    entry = _stored(cache, tmp_path, key)
    good = tmp_path / "restored"
    good.mkdir()
    assert cache.get(key, good) is not None  # intact: a hit, with the binary restored
    CORRUPTIONS[damage](entry)
    work = tmp_path / "w"
    work.mkdir()
    assert cache.get(key, work) is None  # corrupt: a miss, so the candidate is built again
    assert not entry.exists() and not list(work.iterdir())
    assert cache.stats.corrupt == 1 and str(entry) in cache.stats.first_corrupt
    assert "\n" not in cache.stats.first_corrupt
    _stored(cache, tmp_path, key)  # the rebuild is stored again and then served
    assert cache.get(key, work) is not None and (work / "test.out").stat().st_size == 4096


def test_a_cache_folder_that_cannot_be_one_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("a file where the cache should be")
    out = run_cli(
        "batch", "--corpus", CORPUS, "--models", DEMO, "--toolchain", "local", "--gpus", "0",
        "--cache", tmp_path / "cache", "--sessions-dir", tmp_path, "--quiet",
    )  # fmt: skip
    assert out.returncode == 2
    (line,) = error_lines(out.stderr)
    assert line.startswith(f"beavertui: {tmp_path / 'cache'}: cannot use it as the compile cache")
    assert "--no-cache" in line
    json.dumps(line)
