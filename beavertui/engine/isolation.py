"""Operating-system isolation of a stage beyond rlimits: namespaces, a process-count cgroup, sweeps.

A stage may run in its own network namespace (no route anywhere, a loopback of its own), its own PID
namespace (every process it starts dies with its first process, however it detached, and other
processes' /proc entries are out of sight), and its own mount namespace with fresh, empty /tmp,
/var/tmp and /dev/shm (what it writes there vanishes with it). Which of these this machine allows is
probed once per setting, by running the real wrapper on ``true``; what is missing is said in one line
(``Plan.missing``), never silently dropped. A pids cgroup bounds the stage's process count where the
cgroup tree is writable (root); every stage also carries an environment token so that leftovers can be
found and killed where no PID namespace exists. This module builds command prefixes and cleans up; it
does not run stages (sandbox.py does) and knows nothing about tasks or CUDA.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Environment variable that tags every process of one stage.
TOKEN_VAR = "BEAVER_STAGE_TOKEN"

#: Folders replaced by an empty tmpfs inside the stage's mount namespace.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


@dataclass(frozen=True)
class Plan:
    """How stages are wrapped on this machine for one setting, as found by the probe."""

    prefix: tuple[str, ...]
    """argv placed before ``/bin/bash -c``: an ``unshare`` call, or nothing."""
    network: bool
    """The stage has its own network namespace."""
    pid: bool
    """The stage has its own PID namespace and /proc."""
    private_tmp: bool
    """/tmp, /var/tmp and /dev/shm are private, empty tmpfs mounts."""
    user_ns: bool
    """An unprivileged user namespace was needed (uid 0 inside, the caller's uid outside)."""
    missing: str | None
    """One line naming what was asked for but is unavailable here, and why; None when all applied."""

    def describe(self) -> str:
        """A short record of what applied, for the stage result."""
        parts = [
            "network: isolated" if self.network else "network: host",
            "processes: own pid namespace" if self.pid else "processes: session, cgroup and token sweeps",
            "tmp: private" if self.private_tmp else "tmp: shared",
        ]
        if self.user_ns:
            parts.append("via user namespace")
        text = "; ".join(parts)
        return f"{text} (missing: {self.missing})" if self.missing else text


def _unshare_args(network: bool, pid: bool, mount: bool, user_ns: bool) -> tuple[str, ...]:
    args = ["unshare"]
    if user_ns:
        args += ["--user", "--map-root-user"]
    if network:
        args.append("--net")
    if pid:
        args += ["--pid", "--fork", "--kill-child"]
    if mount:
        args.append("--mount")
        if pid:
            args.append("--mount-proc")
    return tuple(args) if len(args) > 1 else ()


def setup_script(plan: Plan, cwd: str, keep: tuple[str, ...], tmp_bytes: int | None = None) -> str:
    """Shell lines run first inside the namespaces: loopback up, private tmp dirs with ``keep`` re-bound.

    A kept folder or file under a replaced folder (the work dir under /tmp, a profiler's output file)
    is opened before the tmpfs hides it and bound back at the same path through its descriptor, so the
    stage sees it unchanged. Each tmpfs holds at most ``tmp_bytes`` (it lives in memory).
    """
    lines: list[str] = []
    if plan.network and shutil.which("ip"):
        lines.append("ip link set lo up 2>/dev/null")
    if plan.private_tmp:
        held = list(enumerate(_under_private((*keep, cwd)), start=20))
        size = f",size={max(1, tmp_bytes // 1024)}k" if tmp_bytes else ""  # memory-backed: bounded
        lines += [f"exec {fd}<{shlex.quote(path)}" for fd, path in held]
        lines += [
            f"mount -t tmpfs -o mode=1777,nosuid,nodev{size} beaver-tmp {d}"
            for d in PRIVATE_DIRS
            if os.path.isdir(d)
        ]
        for fd, path in held:
            q = shlex.quote(path)
            make = (
                f"mkdir -p {q}"
                if os.path.isdir(path)
                else f"mkdir -p {shlex.quote(os.path.dirname(path))} && touch {q}"
            )
            lines.append(f"{make} && mount -c --bind /proc/self/fd/{fd} {q}")
        if held:
            lines.append(f"exec {' '.join(f'{fd}<&-' for fd, _ in held)}")
        lines.append(f"cd {shlex.quote(cwd)}")
    return "; ".join(lines)


def _under_private(paths: tuple[str, ...]) -> list[str]:
    """Existing folders and files among ``paths`` (as written and resolved) under a replaced folder,
    outermost first, none inside another."""
    inside = {
        q
        for p in paths
        if p.startswith("/")
        for q in {os.path.normpath(p), os.path.realpath(p)}
        if os.path.exists(q) and any(q.startswith(d + "/") for d in PRIVATE_DIRS)
    }
    found: list[str] = []
    for q in sorted(inside, key=len):
        if not any(q.startswith(f + "/") for f in found):
            found.append(q)
    return found


def command_paths(command: str) -> tuple[str, ...]:
    """Absolute paths written in a stage's command (the corpus's or beavertui's, never a candidate's)."""
    return tuple(re.findall(r"(?<![\w.~-])/[^\s'\"`;|&<>()$]+", command))


def env_paths(env: Mapping[str, str]) -> tuple[str, ...]:
    """Absolute paths named in environment values (colon- or space-separated lists included)."""
    return tuple(p for value in env.values() for p in re.split(r"[:\s]+", value) if p.startswith("/"))


def _try(plan: Plan) -> str | None:
    """Run ``true`` under the plan in a scratch dir; None when it works, else the first error line."""
    with tempfile.TemporaryDirectory(prefix="beaver-probe-") as d:
        script = setup_script(plan, d, ())
        argv = [*plan.prefix, "/bin/bash", "-c", f"{script}; true" if script else "true"]
        try:
            res = subprocess.run(
                argv, cwd=d, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if res.returncode == 0 and not res.stderr.strip():
            return None
        err = (res.stderr.strip().splitlines() or [f"exit status {res.returncode}"])[0]
        return err


@functools.lru_cache(maxsize=16)
def plan_for(network: bool, private_tmp: bool, pid: bool = True, allow_user_ns: bool = True) -> Plan:
    """The strongest wrapper that works here for what is asked (probed once per process and setting).

    Plain namespaces first (root, or CAP_SYS_ADMIN); an unprivileged user namespace only when those are
    refused and ``allow_user_ns``; then weaker combinations, each loss named in ``missing``.
    """
    if not any((network, private_tmp, pid)):
        return Plan((), False, False, False, False, None)
    if not shutil.which("unshare"):
        return _degraded(network, private_tmp, pid, "no unshare executable (util-linux)")
    user_options = [False, True] if allow_user_ns and os.geteuid() != 0 else [False]
    wants: list[tuple[bool, bool, bool]] = []
    for n, p, t in itertools.product((True, False), repeat=3):
        want = (n and network, p and pid, t and private_tmp)
        if any(want) and want not in wants:
            wants.append(want)
    first_error: str | None = None
    for net, with_pid, tmp in wants:
        for user_ns in user_options:
            prefix = _unshare_args(net, with_pid, with_pid or tmp, user_ns)
            err = _try(Plan(prefix, net, with_pid, tmp, user_ns, None))
            if err is None:
                missing = _lost(network, private_tmp, pid, (net, with_pid, tmp), first_error or "")
                if missing:
                    log.warning("stage sandbox: %s", missing)
                return Plan(prefix, net, with_pid, tmp, user_ns, missing)
            first_error = first_error or f"{' '.join(prefix)}: {err}"
    return _degraded(network, private_tmp, pid, first_error or "namespaces unavailable")


def _lost(network: bool, private_tmp: bool, pid: bool, got: tuple[bool, bool, bool], why: str) -> str | None:
    lost = []
    if network and not got[0]:
        lost.append("network NOT isolated")
    if pid and not got[1]:
        lost.append("no pid namespace")
    if private_tmp and not got[2]:
        lost.append("/tmp NOT private")
    return f"{', '.join(lost)}: {why}" if lost else None


def _degraded(network: bool, private_tmp: bool, pid: bool, why: str) -> Plan:
    missing = _lost(network, private_tmp, pid, (False, False, False), why)
    log.warning("stage sandbox: %s", missing)
    return Plan((), False, False, False, False, missing)


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

    def close(self) -> int:
        """Kill everything still in the cgroup and remove it; return how many were killed."""
        killed = 0
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            pids = [int(p) for p in _read(self.path / "cgroup.procs").split() if p.isdigit()]
            if not pids:
                with contextlib.suppress(OSError):
                    self.path.rmdir()
                if not self.path.exists():
                    return killed
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
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
