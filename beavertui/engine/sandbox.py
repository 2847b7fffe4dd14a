"""Run one shell command the way an attempt's stages must run: contained, bounded, and cleaned up.

Each command runs through bash in its own session (process group) with stdin from /dev/null, a
scrubbed environment (no credentials), resource limits set before exec, and a wall-clock limit after
which the whole group is killed. Output is read incrementally and kept as head and tail; it is never
read unbounded into memory. Whatever the command leaves running is killed when it ends.
This module knows nothing about tasks, categories or CUDA.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: Environment variables a candidate must never see (case-insensitive).
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|^OPENAI_", re.I)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` without any variable that looks like a credential."""
    return {k: v for k, v in env.items() if not _SECRET.search(k)}


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to every stage command (None leaves the inherited limit)."""

    cpu_s: int | None = None
    """RLIMIT_CPU in seconds (per process); None: derived from the stage's time limit."""
    file_bytes: int | None = 8 << 30
    """RLIMIT_FSIZE: largest file a command may write."""
    nproc: int | None = None
    """RLIMIT_NPROC (counts all of the user's processes, so off by default)."""
    core_bytes: int | None = 0
    """RLIMIT_CORE: no core dumps in work dirs."""
    output_bytes: int = 64 << 10
    """Bytes of output kept at the head and again at the tail."""


@dataclass(frozen=True)
class Outcome:
    """What one command did."""

    rc: int | None
    """Exit status; None when it was killed (time limit) or ended by a signal."""
    signal: int | None
    """Signal that ended it (also for a shell that reports 128+N is left as rc)."""
    timed_out: bool
    """The wall-clock limit fired and the group was killed."""
    duration_s: float
    """Wall time, seconds."""
    log: str
    """stdout and stderr interleaved; head and tail when over the bound."""
    log_bytes: int
    """Total bytes written."""
    leftovers_killed: int = 0
    """Processes still alive in the command's session after it ended (killed)."""


class _Bounded:
    """Keeps the first and last ``n`` bytes of a stream."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.n - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.n:
                del self.tail[: len(self.tail) - self.n]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        if omitted <= 0:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        mark = f"\n[... {omitted} bytes omitted ...]\n".encode()
        return (bytes(self.head) + mark + bytes(self.tail)).decode("utf-8", errors="replace")


def _ulimits(limits: Limits, wall_s: float) -> str:
    """Shell ``ulimit`` lines for the limits (set in the stage's own shell: no preexec_fn, thread-safe).

    A limit above the inherited hard limit cannot be raised; that ``ulimit`` fails quietly and the
    inherited one stays.
    """
    cpu = limits.cpu_s if limits.cpu_s is not None else int(wall_s * 8) + 60
    lines = [f"ulimit -H -t {cpu + 2}", f"ulimit -S -t {cpu}"]  # SIGXCPU first, SIGKILL 2 s later
    if limits.file_bytes is not None:
        lines.append(f"ulimit -f {max(1, limits.file_bytes // 1024)}")
    if limits.nproc is not None:
        lines.append(f"ulimit -u {limits.nproc}")
    if limits.core_bytes is not None:
        lines.append(f"ulimit -c {limits.core_bytes // 1024}")
    return "; ".join(f"{line} 2>/dev/null" for line in lines)


def session_members(sid: int) -> list[int]:
    """Pids of live processes whose session id is ``sid`` (Linux /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        # fields: state ppid pgrp session ...
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def kill_session(sid: int) -> int:
    """SIGKILL the process group ``sid`` and anything else still in session ``sid``; return how many."""
    victims = session_members(sid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, signal.SIGKILL)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return len(victims)


def run(
    command: str,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout_s: float,
    limits: Limits = Limits(),
    on_output: Callable[[bytes], None] | None = None,
) -> Outcome:
    """Run ``command`` through bash in ``cwd`` under the limits; never raises for the command's failure."""
    start = time.monotonic()
    buf = _Bounded(limits.output_bytes)
    proc = subprocess.Popen(
        [
            "/bin/bash",
            "-c",
            f'{_ulimits(limits, timeout_s)}; exec /bin/bash -c "$1"',
            "beaver-stage",
            command,
        ],
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    deadline = start + timeout_s
    timed_out = False
    eof = False
    exited_at: float | None = None
    leftovers = 0
    while not eof:
        now = time.monotonic()
        if proc.poll() is not None and exited_at is None:
            exited_at = now
            leftovers = kill_session(proc.pid)  # the main process is gone: nothing else may stay
        if exited_at is None and now >= deadline:
            timed_out = True
            kill_session(proc.pid)
            proc.wait()
            exited_at = time.monotonic()
        if exited_at is not None and time.monotonic() - exited_at > 2.0:
            break  # a descendant outside the session still holds the pipe; stop reading
        ready, _, _ = select.select([fd], [], [], 0.05 if exited_at is None else 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            eof = True
            break
        buf.add(chunk)
        if on_output is not None:
            on_output(chunk)
    proc.stdout.close()
    rc_raw = proc.wait()
    kill_session(proc.pid)
    duration = time.monotonic() - start
    sig = -rc_raw if rc_raw < 0 else None
    if sig is None and rc_raw > 128 and rc_raw - 128 in (4, 6, 7, 8, 9, 11, 15):
        sig = rc_raw - 128  # bash reports a child killed by signal N as 128+N
    rc: int | None = None if (timed_out or rc_raw < 0) else rc_raw
    return Outcome(
        rc=rc,
        signal=None if timed_out else sig,
        timed_out=timed_out,
        duration_s=duration,
        log=buf.text(),
        log_bytes=buf.total,
        leftovers_killed=max(0, leftovers - 0),
    )
