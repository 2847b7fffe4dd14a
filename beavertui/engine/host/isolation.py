"""Operating-system isolation of a stage beyond rlimits: network, PID and mount namespaces.

A stage may run in its own network namespace (no route anywhere, a loopback of its own), its own PID
namespace (every process it starts dies with its first process, however it detached, and other
processes' /proc entries are out of sight), and its own mount namespace with fresh, empty /tmp,
/var/tmp and /dev/shm (what it writes there vanishes with it). Which of these this machine allows is
probed once per setting, by running the real wrapper on ``true``; what is missing is said in one line
(``Plan.missing``), never silently dropped. This module builds the command prefix and the setup lines;
it does not run stages (sandbox.py does), count or kill processes (reaper.py does), and knows nothing
about tasks or CUDA.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

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

    @property
    def mount(self) -> bool:
        """The stage has its own mount namespace."""
        return self.pid or self.private_tmp

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


def setup_script(
    plan: Plan,
    cwd: str,
    keep: tuple[str, ...],
    tmp_bytes: int | None = None,
    read_only: tuple[str, ...] = (),
) -> str:
    """Shell lines run first inside the namespaces: loopback up, private tmp dirs, read-only folders.

    A kept folder or file under a replaced folder (the work dir under /tmp, a profiler's output file)
    is opened before the tmpfs hides it and bound back at the same path through its descriptor, so the
    stage sees it unchanged. Each tmpfs holds at most ``tmp_bytes`` (it lives in memory). Folders in
    ``read_only`` (the corpus, beavertui's cache) become read-only bind mounts; the working folder stays
    writable even when it lies inside one (it is bound back last, from a descriptor opened first).
    """
    lines: list[str] = []
    ip, mount, mkdir, touch = (_tool(name) for name in ("ip", "mount", "mkdir", "touch"))
    if plan.network and ip != "ip":
        lines.append(f"{ip} link set lo up 2>/dev/null")
    if not plan.mount:
        return "; ".join(lines)
    held = list(enumerate(_under_private((*keep, cwd)) if plan.private_tmp else [], start=20))
    frozen = _outermost(
        {os.path.realpath(p) for p in read_only if p.startswith("/") and os.path.isdir(os.path.realpath(p))}
    )
    cwd_fd = 19
    lines.append(f"exec {cwd_fd}<{shlex.quote(cwd)}")
    lines += [f"exec {fd}<{shlex.quote(path)}" for fd, path in held]
    if plan.private_tmp:
        size = f",size={max(1, tmp_bytes // 1024)}k" if tmp_bytes else ""  # memory-backed: bounded
        lines += [
            f"{mount} -t tmpfs -o mode=1777,nosuid,nodev{size} beaver-tmp {d}"
            for d in PRIVATE_DIRS
            if os.path.isdir(d)
        ]
    for fd, path in held:
        q = shlex.quote(path)
        make = (
            f"{mkdir} -p {q}"
            if os.path.isdir(path)
            else f"{mkdir} -p {shlex.quote(os.path.dirname(path))} && {touch} {q}"
        )
        fail = shlex.quote(f"beavertui sandbox: cannot keep {path} visible under the private tmp")
        lines.append(
            f"{{ {make} && {mount} -c --bind /proc/self/fd/{fd} {q}; }} || {{ echo {fail} >&2; exit 125; }}"
        )
    hidden = [d for d in PRIVATE_DIRS if plan.private_tmp]
    for path in frozen:
        if any(path.startswith(d + "/") for d in hidden):
            # Under a private tmp the folder itself is out of sight; only what was bound back inside it
            # (a library a work dir links from the corpus) is visible, and that is made read-only. Binding
            # the folder onto itself would hide those binds (non-recursive) and with them the library.
            inside = [h for _, h in held if (h == path or h.startswith(path + "/")) and h != cwd]
        else:
            inside = [path]
        for ro in inside:
            q = shlex.quote(ro)
            fail = shlex.quote(f"beavertui sandbox: {ro} stays writable (read-only bind refused)")
            bind = "" if ro != path or ro in (h for _, h in held) else f"{mount} --bind {q} {q} && "
            lines.append(
                f"if [ -d {q} ]; then {{ {bind}{mount} -o remount,bind,ro {q}; }} 2>/dev/null"
                f" || echo {fail} >&2; fi"
            )
    if any(cwd == f or cwd.startswith(f + "/") for f in frozen):
        q = shlex.quote(cwd)
        fail = shlex.quote(f"beavertui sandbox: cannot keep {cwd} writable")
        lines.append(f"{mount} -c --bind /proc/self/fd/{cwd_fd} {q} || {{ echo {fail} >&2; exit 125; }}")
    lines.append(f"exec {' '.join(f'{fd}<&-' for fd in [cwd_fd, *(fd for fd, _ in held)])}")
    lines.append(f"cd {shlex.quote(cwd)}")
    return "; ".join(lines)


@functools.lru_cache(maxsize=8)
def _tool(name: str) -> str:
    """Absolute path of a system tool (the stage's PATH may lack /usr/sbin), else the bare name."""
    return shlex.quote(
        shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/bin:/sbin:/bin") or name
    )


def _outermost(paths: set[str]) -> list[str]:
    """``paths`` without those inside another, shortest first."""
    found: list[str] = []
    for q in sorted(paths, key=len):
        if not any(q == f or q.startswith(f + "/") for f in found):
            found.append(q)
    return found


def _under_private(paths: tuple[str, ...]) -> list[str]:
    """Existing folders and files among ``paths`` (as written and resolved) under a replaced folder,
    outermost first, none inside another."""
    return _outermost(
        {
            q
            for p in paths
            if p.startswith("/")
            for q in {os.path.normpath(p), os.path.realpath(p)}
            if os.path.exists(q) and any(q.startswith(d + "/") for d in PRIVATE_DIRS)
        }
    )


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

    Plain namespaces first (root with CAP_SYS_ADMIN); a user namespace only when those are refused
    (a non-root user, root in a container without CAP_SYS_ADMIN) and ``allow_user_ns``; then weaker
    combinations, each loss named in ``missing``.
    """
    if not any((network, private_tmp, pid)):
        return Plan((), False, False, False, False, None)
    if not shutil.which("unshare"):
        return _degraded(network, private_tmp, pid, "no unshare executable (util-linux)")
    user_options = [False, True] if allow_user_ns else [False]
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
