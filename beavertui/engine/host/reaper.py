"""Every process of a stage: bounded in number, found however it detached, and killed.

A pids cgroup per stage bounds processes and threads where the cgroup tree is writable (root) and lists
every member; RLIMIT_NPROC is the unprivileged fallback (sandbox.py sets it). Leftovers are found by the
stage's session id and by an environment token every stage process inherits; the stage's first process
carries a parent-death signal so that a killed beavertui takes its stages with it; and without a PID
namespace a non-root beavertui makes itself non-dumpable so that stages cannot read its environment.
This module finds and kills processes; it does not start them (sandbox.py does) nor build namespaces
(isolation.py does).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

#: Environment variable that tags every process of one stage.
TOKEN_VAR = "BEAVER_STAGE_TOKEN"


# ---------------------------------------------------------------- process count: a pids cgroup


@functools.lru_cache(maxsize=1)
def _pids_parent() -> Path | None:
    """The writable pids-cgroup folder this process lives in (v1 pids hierarchy or v2), or None."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
        own = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths = {}
    for line in own:
        hid, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else ["" if hid == "0" else controllers]:
            paths[c] = path
    v1 = v2 = None
    for line in mountinfo:
        pre, _, post = line.partition(" - ")
        fields, rest = pre.split(), post.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        root, mnt = fields[3], fields[4]
        if rest[0] == "cgroup" and "pids" in rest[2].split(",") and "pids" in paths:
            v1 = _join(mnt, root, paths["pids"])
        elif rest[0] == "cgroup2" and "" in paths:
            v2 = _join(mnt, root, paths[""])
    for cand in (v1, v2):
        if cand is not None and cand.is_dir() and os.access(cand, os.W_OK):
            if cand == v2 and "pids" not in _read(cand / "cgroup.controllers").split():
                continue
            return cand
    return None


def _join(mnt: str, root: str, path: str) -> Path:
    rel = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return Path(mnt) / ("" if rel == "." else rel)


def _read(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def _remove_stale(parent: Path) -> None:
    """Remove empty stage cgroups over 10 minutes old (left by a beavertui that was killed); once."""
    for d in parent.glob("beaver-*"):
        with contextlib.suppress(OSError):
            if time.time() - d.stat().st_mtime > 600 and not _read(d / "cgroup.procs").split():
                d.rmdir()


class PidsCgroup:
    """A per-stage pids cgroup: a hard bound on processes and threads, and a complete kill list."""

    def __init__(self, path: Path, max_pids: int) -> None:
        self.path = path
        self.max_pids = max_pids

    @classmethod
    def create(cls, token: str, max_pids: int) -> PidsCgroup | None:
        """A new cgroup under this process's own, or None where none can be made (non-root, read-only)."""
        parent = _pids_parent()
        if parent is None:
            return None
        _remove_stale(parent)
        path = parent / f"beaver-{token}"
        try:
            path.mkdir()
            if not (path / "pids.max").exists():  # v2: pids not enabled for children yet
                with contextlib.suppress(OSError):
                    (parent / "cgroup.subtree_control").write_text("+pids")
            (path / "pids.max").write_text(str(max_pids))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path, max_pids)

    def join_line(self) -> str:
        """Shell line moving the stage's first process (and so all it starts) into the cgroup."""
        return f"echo 0 2>/dev/null > {shlex.quote(str(self.path / 'cgroup.procs'))}"

    def refused(self) -> int:
        """Forks refused because the bound was reached (pids.events ``max``)."""
        for line in _read(self.path / "pids.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit():
                return int(value)
        return 0

    def members(self) -> list[int]:
        """Pids in the cgroup now."""
        return [int(p) for p in _read(self.path / "cgroup.procs").split() if p.isdigit()]

    def kill(self) -> int:
        """SIGKILL every member; return how many were signalled."""
        n = 0
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                n += 1
        return n

    def close(self) -> int:
        """Kill everything still in the cgroup and remove it; return how many were killed."""
        killed = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            if not self.members():
                with contextlib.suppress(OSError):
                    self.path.rmdir()
                if not self.path.exists():
                    return killed
            killed += self.kill()
            time.sleep(0.02)
        log.warning("stage sandbox: cgroup %s could not be removed", self.path)
        return killed


@functools.lru_cache(maxsize=1)
def death_signal_prefix() -> tuple[str, ...]:
    """``setpriv --pdeathsig KILL``: the stage's first process dies with the thread that started it.

    With a PID namespace that ends the whole stage when beavertui is killed (SIGKILL included);
    without one, only the stage's shell. Empty where setpriv lacks the option (util-linux < 2.33).
    """
    argv = ("setpriv", "--pdeathsig", "KILL", "--")
    try:
        ok = subprocess.run([*argv, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return argv if ok else ()


# ---------------------------------------------------------------- the caller's own /proc entries


@functools.lru_cache(maxsize=1)
def hide_caller() -> bool:
    """Make this process non-dumpable (prctl PR_SET_DUMPABLE 0); True when it took.

    Its /proc/<pid>/environ and mem (where the API key it was started with lies) then belong to root,
    so a stage running as the same unprivileged user cannot read them. Used only where a stage gets no
    PID namespace; it also stops core dumps of beavertui and ptrace attaches by the same user.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(4, 0, 0, 0, 0)) == 0  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        return False


# ---------------------------------------------------------------- leftovers by environment token


def tagged(token: str) -> list[int]:
    """Live processes whose initial environment carries the stage token (those readable to us)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry))
    return found


def kill_tagged(token: str) -> int:
    """SIGKILL every process tagged with ``token``, repeating while new ones appear; return the count."""
    killed = 0
    for _ in range(5):
        pids = tagged(token)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)
    return killed


# ---------------------------------------------------------------- by session and by count


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
    _send(sid, victims, signal.SIGKILL)
    return len(victims)


def _send(sid: int, pids: Iterable[int], sig: int) -> None:
    """``sig`` to the process group ``sid`` and to each of ``pids`` (gone or unreachable ones skipped)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def signal_all(sid: int, token: str, sig: int) -> int:
    """Send ``sig`` to the process group ``sid``, everything else in session ``sid`` and every process tagged
    with ``token`` (SIGSTOP and SIGCONT of a stage paused for a timing stage); return how many got it."""
    pids = set(session_members(sid)) | set(tagged(token))
    _send(sid, pids, sig)
    return len(pids)


def user_tasks(uid: int) -> int:
    """Processes and threads of ``uid`` now (what RLIMIT_NPROC counts), from /proc."""
    n = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    n += len(os.listdir(f"/proc/{entry}/task"))
    return n
