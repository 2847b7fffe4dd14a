"""The stage sandbox: time limit kills the whole group, output bounds, env scrub, stdin, rlimits.

Namespaces, the process-count bound and leftovers that left the group: test_engine_isolation.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from beavertui.engine.host import sandbox


def _alive(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            pids.append(int(entry))
    return pids


def test_timeout_kills_whole_group_and_leaves_nothing(tmp_path: Path) -> None:
    # a distinctive sleep length to find leftovers by, distinct per process: copies of the suite run at once
    marker = f"31337.{os.getpid()}"
    cmd = f"sleep {marker} & sleep {marker} & (sleep {marker}; echo never) ; echo never"
    t0 = time.monotonic()
    out = sandbox.run(cmd, tmp_path, dict(os.environ), timeout_s=1.0)
    elapsed = time.monotonic() - t0
    assert out.timed_out is True
    assert out.rc is None
    assert elapsed < 4.0
    time.sleep(0.2)
    assert _alive(f"sleep {marker}") == []
    assert "never" not in out.log


def test_background_child_of_a_finished_command_is_killed(tmp_path: Path) -> None:
    marker = f"31338.{os.getpid()}"
    out = sandbox.run(f"(sleep {marker} &) ; echo done", tmp_path, dict(os.environ), timeout_s=10.0)
    assert out.rc == 0 and not out.timed_out
    assert out.log.strip() == "done"
    time.sleep(0.2)
    assert _alive(f"sleep {marker}") == []


def test_child_that_leaves_the_session_is_not_waited_forever(tmp_path: Path) -> None:
    # setsid escapes the process group; the runner still stops reading and returns promptly.
    marker = f"31339.{os.getpid()}"
    t0 = time.monotonic()
    out = sandbox.run(f"setsid sleep {marker} & echo hi", tmp_path, dict(os.environ), timeout_s=10.0)
    assert out.rc == 0
    assert time.monotonic() - t0 < 5.0
    for pid in _alive(f"sleep {marker}"):
        os.kill(pid, 9)


def test_output_is_bounded_to_head_and_tail(tmp_path: Path) -> None:
    limits = sandbox.Limits(output_bytes=1000)
    cmd = "echo FIRSTLINE; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo LASTLINE"
    out = sandbox.run(cmd, tmp_path, dict(os.environ), timeout_s=30.0, limits=limits)
    assert out.rc == 0
    assert out.log_bytes == len("FIRSTLINE\n") + 5_000_000 + 1 + len("LASTLINE\n")
    assert out.log.startswith("FIRSTLINE")
    assert out.log.rstrip().endswith("LASTLINE")
    assert "bytes omitted" in out.log
    assert len(out.log) < 2200


def test_env_is_scrubbed_of_credentials() -> None:
    env = {
        "PATH": "/bin",
        "OPENAI_API_KEY": "sk-1",
        "OPENAI_BASE_URL": "http://x",
        "HF_TOKEN": "t",
        "my_secret_thing": "s",
        "DB_PASSWORD": "p",
        "AWS_ACCESS_KEY_ID": "a",
        "CUDA_VISIBLE_DEVICES": "0",
        "HOME": "/root",
    }
    assert sandbox.scrub_env(env) == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0", "HOME": "/root"}


def test_stdin_is_dev_null_and_signal_recorded(tmp_path: Path) -> None:
    out = sandbox.run("cat; echo rc=$?", tmp_path, dict(os.environ), timeout_s=5.0)
    assert out.log.strip() == "rc=0"
    seg = sandbox.run("kill -SEGV $$", tmp_path, dict(os.environ), timeout_s=5.0)
    assert seg.signal == 11 and seg.rc == 128 + 11
    fpe = sandbox.run(
        "sh -c 'kill -FPE $$'; true_rc=$?; exit $true_rc", tmp_path, dict(os.environ), timeout_s=5.0
    )
    assert fpe.rc == 136 and fpe.signal == 8


def test_file_size_limit_applies(tmp_path: Path) -> None:
    limits = sandbox.Limits(file_bytes=1 << 20)
    out = sandbox.run("head -c 3000000 /dev/zero > big.bin", tmp_path, dict(os.environ), 10.0, limits)
    assert out.rc == 128 + 25 and out.signal == 25  # SIGXFSZ
    assert out.stopped_by == "file size limit of 1048576 bytes (RLIMIT_FSIZE)"
    assert (tmp_path / "big.bin").stat().st_size == 1 << 20


def test_cpu_time_limit_stops_a_busy_loop(tmp_path: Path) -> None:
    limits = sandbox.Limits(cpu_s=1)
    t0 = time.monotonic()
    out = sandbox.run("while :; do :; done", tmp_path, dict(os.environ), timeout_s=20.0, limits=limits)
    assert not out.timed_out and out.signal == 24  # SIGXCPU
    assert out.stopped_by == "CPU time limit of 1 s per process (RLIMIT_CPU)"
    assert time.monotonic() - t0 < 10


def test_a_started_command_is_read_up_to_a_line_and_finished_later(tmp_path: Path) -> None:
    marker = f"31340.{os.getpid()}"
    started = sandbox.start(
        f"echo pre; echo 'READY now'; sleep {marker} & wait; echo after", tmp_path, dict(os.environ), 60.0
    )
    try:
        assert started.until(b"READY", 10.0) and started.alive()
        assert not started.until(b"never", 0.2) and started.alive()  # no such line yet: still running
        t0 = time.monotonic()
        out = started.finish(0.5)  # the limit counts from now
    finally:
        started.stop()
    assert 0.4 < time.monotonic() - t0 < 4.0
    assert out.timed_out and out.rc is None and out.stopped_by == "wall-clock limit of 0.5 s"
    assert out.log.splitlines()[:2] == ["pre", "READY now"] and "after" not in out.log
    assert out.duration_s >= time.monotonic() - t0 - 0.1  # counted from the start
    assert started.finish() is out and started.stop() is out and not started.alive()
    time.sleep(0.2)
    assert _alive(f"sleep {marker}") == []


def test_a_started_command_that_ends_first_is_not_ready(tmp_path: Path) -> None:
    started = sandbox.start("echo READ; exit 3", tmp_path, dict(os.environ), 60.0)
    t0 = time.monotonic()
    assert not started.until(b"READY", 30.0)
    assert time.monotonic() - t0 < 5.0
    out = started.stop()
    assert out.rc == 3 and not out.timed_out and out.log == "READ\n"


def _states(pid: int) -> set[str]:
    """The states (/proc stat) of the processes in session ``pid``."""
    from beavertui.engine.host import reaper

    out = set()
    for member in reaper.session_members(pid):
        try:
            with open(f"/proc/{member}/stat", encoding="ascii") as fh:
                out.add(fh.read().rsplit(")", 1)[-1].split()[0])
        except OSError:
            continue
    return out


def test_a_paused_command_is_stopped_and_its_stop_counts_in_neither_its_limit_nor_its_duration(
    tmp_path: Path,
) -> None:
    # about 0.4 s of work in steps (a new process each) under a 3 s limit, stopped for 3.5 s on the way
    started = sandbox.start(
        "echo begin; for i in $(seq 20); do sleep 0.02; done; echo done", tmp_path, dict(os.environ), 3.0
    )
    try:
        assert started.until(b"begin", 10.0)
        assert started.pause() and not started.pause()  # stopped once; a second stop does nothing
        time.sleep(0.3)
        assert _states(started.proc.pid) <= {"T", "t"}  # every process of it is stopped
        time.sleep(3.2)
        assert started.paused_s() >= 3.4
        started.resume()
        out = started.finish()
    finally:
        started.stop()
    assert not out.timed_out and out.rc == 0 and out.log == "begin\ndone\n", out
    assert out.paused_s is not None and out.paused_s >= 3.4
    assert out.duration_s < 3.0  # the stop is not in it
    assert not started.pause()  # it has ended: nothing to stop
    plain = sandbox.run("true", tmp_path, dict(os.environ), 10.0)
    assert plain.paused_s is None
