"""Run one shell command the way an attempt's stages must run: contained, bounded, and cleaned up.

Each command runs through bash in its own session (process group) with stdin from /dev/null, a
scrubbed environment (no credentials), HOME, TMPDIR, XDG and cache folders inside its working
folder, resource limits set before exec (CPU time, file size, process count), the namespaces of
isolation.py where the machine allows them (no network, own PID space, private /tmp), and a
wall-clock limit after which everything it started is killed. Output is read incrementally and kept
as head and tail; it is never read unbounded into memory. Whatever the command leaves running is
killed when it ends (reaper.py finds it), and a limit that stopped it is named in
``Outcome.stopped_by``. ``start`` leaves a command running for its caller to read and end later (a
process started ahead of the moment it is needed, waiting for a signal in its working folder).
This module knows nothing about tasks, categories or CUDA.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from beavertui.engine.host import isolation, reaper

#: Environment variables a candidate must never see (case-insensitive).
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|^OPENAI_", re.I)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` without any variable that looks like a credential."""
    return {k: v for k, v in env.items() if not _SECRET.search(k)}


#: Variables of beavertui's own environment that a stage inherits: what compilers, the CUDA driver and
#: toolkit, Python and make need, and nothing else. A credential under any other name (``GH_PAT``,
#: ``DATABASE_URL``) never reaches a candidate; one under an allowed name that looks like a credential is
#: still removed (``scrub_env``).
INHERITED_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "PWD",
        "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "PKG_CONFIG_PATH",
        "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CUDAHOSTCXX", "MAKEFLAGS",
        "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "VIRTUAL_ENV", "CONDA_PREFIX",
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    }
)  # fmt: skip
INHERITED_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NVCC_", "CUPTI_", "TORCH_", "TRITON_", "XDG_", "BEAVER_")


def inherited_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of beavertui's own environment a stage may see: an allow-list of names
    (``INHERITED_NAMES``, ``INHERITED_PREFIXES``), then without credential-like names."""
    kept = {k: v for k, v in env.items() if k in INHERITED_NAMES or k.startswith(INHERITED_PREFIXES)}
    return scrub_env(kept)


@dataclass(frozen=True)
class Limits:
    """Resource limits and isolation of every stage command (None leaves the inherited limit)."""

    cpu_s: int | None = None
    """RLIMIT_CPU in seconds (per process); None: derived from the stage's time limit."""
    file_bytes: int | None = 8 << 30
    """RLIMIT_FSIZE: largest file a command may write, bytes."""
    nproc: int | None = 4096
    """Most processes and threads a stage may hold at once: a pids cgroup where one can be made
    (root), else RLIMIT_NPROC at the user's current task count plus this (RLIMIT_NPROC counts all of
    a user's tasks and never binds root). None: no bound."""
    core_bytes: int | None = 0
    """RLIMIT_CORE: no core dumps in work dirs."""
    output_bytes: int = 64 << 10
    """Bytes of output kept at the head and again at the tail."""
    network: Literal["isolated", "host"] = "isolated"
    """isolated: an own network namespace where the OS allows it (said in ``Outcome.sandbox`` when not);
    host: the machine's network."""
    private_tmp: bool = True
    """Empty private /tmp, /var/tmp and /dev/shm (mount namespace) where the OS allows it, each a tmpfs
    of at most ``file_bytes``."""
    pid_namespace: bool = True
    """An own PID namespace where the OS allows it: everything the stage started dies with it, and
    other processes (the API key in their environment) are out of its sight."""
    user_namespace: bool = True
    """When plain namespaces are refused (non-root, or root without CAP_SYS_ADMIN), allow a user
    namespace (the stage is uid 0 inside it and the caller's uid outside; device files keep their
    own modes)."""
    nice: int = 0
    """Added to the niceness of the command's processes (``nice -n``): above 0, they yield the CPU to the
    machine's other work when the cores are all busy (builds beside a timing stage, say); 0 leaves it."""
    cpus: str | None = None
    """The CPUs the command's processes may run on, as ``taskset -c`` takes them ("2-15", "0,2-7"); None:
    every CPU this process may use. Ignored, and said in ``Outcome.sandbox``, where taskset is missing."""


@dataclass(frozen=True)
class Outcome:
    """What one command did."""

    rc: int | None
    """Exit status; None when the time limit killed it. A command ended by signal N reports 128+N
    (it runs as a child of the stage's shell), with N in ``signal``."""
    signal: int | None
    """Signal that ended it."""
    timed_out: bool
    """The wall-clock limit fired and the group was killed."""
    duration_s: float
    """Wall time, seconds."""
    log: str
    """stdout and stderr interleaved; head and tail when over the bound."""
    log_bytes: int
    """Total bytes written."""
    leftovers_killed: int = 0
    """Processes the runner found alive after the command ended and killed (those a PID namespace
    ended with it are not counted)."""
    stopped_by: str | None = None
    """The limits that stopped or refused the command, in words (None: none fired)."""
    sandbox: str = ""
    """What isolation applied, and what was unavailable here and why."""
    paused_s: float | None = None
    """Seconds it was stopped (``Started.pause``), counted neither in ``duration_s`` nor in its time limit;
    None when it never was."""


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


def bounded_text(data: bytes, n: int) -> str:
    """``data`` as a stage's log keeps a command's output: whole up to ``2 n`` bytes, else its first and last
    ``n`` bytes around a line saying how many were left out."""
    buf = _Bounded(n)
    buf.add(data)
    return buf.text()


def _ulimits(limits: Limits, wall_s: float, nproc: int | None) -> str:
    """Shell ``ulimit`` lines for the limits (set in the stage's own shell: no preexec_fn, thread-safe).

    A limit above the inherited hard limit cannot be raised; that ``ulimit`` fails quietly and the
    inherited one stays.
    """
    lines = [f"ulimit -H -t {_cpu_s(limits, wall_s) + 2}", f"ulimit -S -t {_cpu_s(limits, wall_s)}"]
    if limits.file_bytes is not None:
        lines.append(f"ulimit -f {max(1, limits.file_bytes // 1024)}")
    if nproc is not None:
        lines.append(f"ulimit -u {nproc}")
    if limits.core_bytes is not None:
        lines.append(f"ulimit -c {limits.core_bytes // 1024}")
    return "; ".join(f"{line} 2>/dev/null" for line in lines)


def _priority_prefix(limits: Limits, notes: list[str]) -> str:
    """``nice``/``taskset`` before the command for ``limits.nice`` and ``limits.cpus`` (both exec the command:
    the process tree stays as it is), each said in ``notes``."""
    prefix = ""
    if limits.nice:
        prefix += f"nice -n {int(limits.nice)} "
        notes.append(f"niceness +{int(limits.nice)}")
    if limits.cpus:
        if shutil.which("taskset") is None:
            notes.append(f"CPUs {limits.cpus} NOT applied: no taskset here")
        else:
            prefix += f"taskset -c {shlex.quote(limits.cpus)} "
            notes.append(f"CPUs {limits.cpus}")
    return prefix


def _cpu_s(limits: Limits, wall_s: float) -> int:
    """RLIMIT_CPU soft limit, seconds: SIGXCPU at this, SIGKILL 2 s later."""
    return limits.cpu_s if limits.cpu_s is not None else int(wall_s * 8) + 60


#: Folders inside the working folder that stand in for the user's own.
_PRIVATE_ENV = {
    "HOME": "home",
    "TMPDIR": "tmp",
    "TMP": "tmp",
    "TEMP": "tmp",
    "XDG_CACHE_HOME": "home/.cache",
    "XDG_CONFIG_HOME": "home/.config",
    "XDG_DATA_HOME": "home/.local/share",
    "XDG_STATE_HOME": "home/.local/state",
    "XDG_RUNTIME_DIR": "run",
    "CUDA_CACHE_PATH": "home/.nv/ComputeCache",
    "TRITON_CACHE_DIR": "home/.triton",
    "TORCH_EXTENSIONS_DIR": "home/.cache/torch_extensions",
    "PYTHONPYCACHEPREFIX": "home/.cache/pycache",
    "MPLCONFIGDIR": "home/.config/matplotlib",
}

#: Where the stand-in folders live inside the working folder.
PRIVATE_ROOT = ".sandbox"


def contained_env(env: Mapping[str, str], cwd: str | os.PathLike[str]) -> dict[str, str]:
    """``env`` with HOME, temp, XDG and cache folders inside ``cwd/.sandbox`` (made here).

    Packages installed with ``pip --user`` stay importable: PYTHONUSERBASE keeps pointing at the
    original user base when it exists.
    """
    out = dict(env)
    root = Path(cwd) / PRIVATE_ROOT
    old_home = env.get("HOME")
    if "PYTHONUSERBASE" not in env and old_home and os.path.isdir(os.path.join(old_home, ".local")):
        out["PYTHONUSERBASE"] = os.path.join(old_home, ".local")
    for var, rel in _PRIVATE_ENV.items():
        p = root / rel
        p.mkdir(parents=True, exist_ok=True, mode=0o700)
        out[var] = str(p)
    return out


#: What bash prints when a child of the stage's shells hit a limit (the command may still go on).
_FSIZE_HIT = re.compile(rb"File size limit exceeded")
_CPU_HIT = re.compile(rb"CPU time limit exceeded")
#: Set to ``0`` in beavertui's own environment to run every stage without namespaces (an operator's
#: switch for a machine where they misbehave; each stage record then says so).
NAMESPACES_SWITCH = "BEAVERTUI_NAMESPACES"
#: Shared paths under a private folder that stay visible when they exist (the CUDA MPS pipe directory).
ALWAYS_KEEP = ("/tmp/nvidia-mps",)
#: The interpreter beavertui runs under (adapted commands call it; a virtual environment may be in /tmp).
_OWN = (sys.prefix, sys.exec_prefix, sys.executable)

_FORK_REFUSED = re.compile(rb"fork: (retry: )?Resource temporarily unavailable|Cannot fork|fork failed")


def run(
    command: str,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout_s: float,
    limits: Limits = Limits(),
    on_output: Callable[[bytes], None] | None = None,
    keep: tuple[str, ...] = (),
    read_only: tuple[str, ...] = (),
) -> Outcome:
    """Run ``command`` through bash in ``cwd`` under the limits; never raises for the command's failure.

    ``keep``: folders and files the command needs that may lie under a folder made private (a linked
    library under /tmp, say); the working folder, beavertui's own interpreter and the absolute paths
    written in ``command`` or named in ``env`` are always kept. ``read_only``: folders the command may
    read but not change (the corpus, beavertui's cache), where a mount namespace is available; the
    working folder stays writable.
    """
    return start(command, cwd, env, timeout_s, limits, on_output, keep, read_only).finish()


def start(
    command: str,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout_s: float,
    limits: Limits = Limits(),
    on_output: Callable[[bytes], None] | None = None,
    keep: tuple[str, ...] = (),
    read_only: tuple[str, ...] = (),
) -> Started:
    """``run``'s command started and left running: read it with ``Started.until`` and end it with
    ``Started.finish`` (or ``Started.stop``), which the caller must call. ``timeout_s`` is the most the
    command may live in all (it sets the CPU time limit, and ``finish()`` without a limit of its own)."""
    began = time.monotonic()
    buf = _Bounded(limits.output_bytes)
    token = uuid.uuid4().hex
    if os.environ.get(NAMESPACES_SWITCH) == "0":
        plan = isolation.Plan(
            (), False, False, False, False, f"namespaces switched off by {NAMESPACES_SWITCH}=0"
        )
    else:
        plan = isolation.plan_for(
            limits.network == "isolated", limits.private_tmp, limits.pid_namespace, limits.user_namespace
        )
    stage_env = {**contained_env(env, cwd), reaper.TOKEN_VAR: token}
    cgroup = reaper.PidsCgroup.create(token, limits.nproc) if limits.nproc is not None else None
    rlimit_nproc = None
    if limits.nproc is not None and cgroup is None and os.geteuid() != 0:
        rlimit_nproc = reaper.user_tasks(os.geteuid()) + limits.nproc
    notes = [plan.describe()]
    if not plan.pid and os.geteuid() != 0 and reaper.hide_caller():
        notes.append("caller made non-dumpable (its /proc environ unreadable to the stage)")
    if limits.nproc is not None and cgroup is None and rlimit_nproc is None:
        notes.append("process count NOT bounded: root, and no writable pids cgroup")
    frozen = [p for p in read_only if os.path.isdir(p)]
    priority = _priority_prefix(limits, notes)
    if frozen:
        notes.append(f"read-only: {len(frozen)} folders" if plan.mount else "read-only folders NOT protected")
    setup = isolation.setup_script(
        plan,
        os.path.abspath(cwd),
        (*keep, *isolation.env_paths(env), *isolation.command_paths(command), *_OWN, *ALWAYS_KEEP),
        limits.file_bytes,
        read_only,
    )
    script = "; ".join(
        part
        for part in (
            cgroup.join_line() if cgroup else "",
            setup,
            _ulimits(limits, timeout_s, rlimit_nproc),
            # a child, not exec: the first process of a PID namespace ignores signals it does not
            # handle (SIGXCPU, SIGSEGV), so the command must not be that process
            f'{priority}/bin/bash -c "$1" & wait $!',
        )
        if part
    )
    try:
        proc = subprocess.Popen(
            [
                *reaper.death_signal_prefix(),
                *plan.prefix,
                "/bin/bash",
                "-c",
                script,
                "beaver-stage",
                command,
            ],
            cwd=cwd,
            env=stage_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        if cgroup is not None:
            cgroup.close()
        raise
    return Started(
        proc, began, timeout_s, limits, buf, token, cgroup, rlimit_nproc, notes, on_output, pid_ns=plan.pid
    )


class Started:
    """A command ``start`` left running, with its output read so far (only while a method reads it)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        began: float,
        timeout_s: float,
        limits: Limits,
        buf: _Bounded,
        token: str,
        cgroup: reaper.PidsCgroup | None,
        rlimit_nproc: int | None,
        notes: list[str],
        on_output: Callable[[bytes], None] | None,
        pid_ns: bool = False,
    ) -> None:
        self._pid_ns = pid_ns
        self.proc, self.began, self.timeout_s, self.limits = (
            proc,
            began,
            timeout_s,
            limits,
        )  # began: monotonic
        self._buf, self._token, self._cgroup, self._rlimit_nproc = buf, token, cgroup, rlimit_nproc
        self._notes, self._on_output = notes, on_output
        assert proc.stdout is not None
        self._fd = proc.stdout.fileno()
        os.set_blocking(self._fd, False)
        self._reading = True
        self._timed_out = False
        self._exited_at: float | None = None
        self._leftovers = 0
        self._line = b""
        self._outcome: Outcome | None = None
        self._pause_lock = threading.Lock()
        self._paused_at: float | None = None
        self._paused_s = 0.0
        self._pauses = 0

    def _sweep(self) -> int:
        """Kill whatever of the stage is left: its pids cgroup, and by session and environment token. In a
        PID namespace whose first process has ended there is nothing left to find (the kernel ended every
        process of the namespace with it), so the two scans of /proc, milliseconds each and more on a busy
        machine, are left out."""
        if self._pid_ns and self.proc.poll() is not None:
            return self._cgroup.kill() if self._cgroup is not None else 0
        n = reaper.kill_session(self.proc.pid)
        if self._cgroup is not None:
            n += self._cgroup.kill()
        return n + reaper.kill_tagged(self._token)

    def _seen(self, chunk: bytes, marker: bytes) -> bool:
        """Whether a line of the output starts with ``marker`` (this chunk with the line it continues)."""
        lines = (self._line + chunk).split(b"\n")
        self._line = lines[-1][: len(marker)]
        return any(ln.startswith(marker) for ln in lines[:-1])

    def pause(self) -> bool:
        """Stop (SIGSTOP) everything the command started, so that it uses no CPU and launches no GPU work
        until ``resume``; the time it stays stopped is added to its time limit and left out of its duration.
        False when it has ended or is stopped already."""
        with self._pause_lock:
            if self._paused_at is not None or self._outcome is not None or self.proc.poll() is not None:
                return False
            reaper.signal_all(self.proc.pid, self._token, signal.SIGSTOP)
            self._paused_at = time.monotonic()
            self._pauses += 1
            return True

    def resume(self) -> None:
        """Continue (SIGCONT) what ``pause`` stopped (a no-op when it is not stopped)."""
        with self._pause_lock:
            if self._paused_at is None:
                return
            reaper.signal_all(self.proc.pid, self._token, signal.SIGCONT)
            self._paused_s += time.monotonic() - self._paused_at
            self._paused_at = None

    def paused_s(self) -> float:
        """Seconds it has been stopped so far (a stop under way included)."""
        with self._pause_lock:
            ongoing = time.monotonic() - self._paused_at if self._paused_at is not None else 0.0
            return self._paused_s + ongoing

    def _read(self, deadline: float, kill: bool, marker: bytes | None = None, extend: bool = False) -> bool:
        """Read output until the command has ended and its output is closed, or (with ``marker``) a line
        starts with it: True then. At ``deadline`` (later by the time it was stopped, with ``extend``; never
        while it is stopped) everything it started is killed when ``kill``, else the reading stops there
        (False) and the command goes on."""
        while self._reading:
            now = time.monotonic()
            if self.proc.poll() is not None and self._exited_at is None:
                self._exited_at = now
                self._leftovers = self._sweep()  # the main process is gone: nothing else may stay
            late = now >= deadline
            if late and extend:
                late = self._paused_at is None and now >= deadline + self.paused_s()
            if self._exited_at is None and late:
                if not kill:
                    return False
                self._timed_out = True
                self._sweep()
                self.proc.wait()
                self._exited_at = time.monotonic()
            if self._exited_at is not None and time.monotonic() - self._exited_at > 2.0:
                self._reading = False
                break  # something we could not reach still holds the pipe; stop reading
            ready, _, _ = select.select([self._fd], [], [], 0.05 if self._exited_at is None else 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                self._reading = False
                break
            self._buf.add(chunk)
            if self._on_output is not None:
                self._on_output(chunk)
            if marker is not None and self._seen(chunk, marker):
                return True
        return False

    def until(self, marker: bytes, timeout_s: float) -> bool:
        """Read the output until a line starts with ``marker`` (True), the command ends, or ``timeout_s``
        pass (False, the command still running)."""
        return self._read(time.monotonic() + timeout_s, kill=False, marker=marker)

    def alive(self) -> bool:
        """Whether the command's first process is still running."""
        return self._outcome is None and self.proc.poll() is None

    def stop(self) -> Outcome:
        """Kill it now, with everything it started (a no-op once finished): its outcome."""
        return self.finish(0.0)

    def finish(self, timeout_s: float | None = None) -> Outcome:
        """Read it to its end, killing everything it started ``timeout_s`` from now (default: at the
        ``timeout_s`` of ``start``); what it did, its wall time counted from its start. Only the first call
        reads: any later one returns the same outcome."""
        if self._outcome is not None:
            return self._outcome
        limit = self.timeout_s if timeout_s is None else timeout_s
        deadline = self.began + limit if timeout_s is None else time.monotonic() + limit
        self._read(deadline, kill=True, extend=timeout_s is None)
        self.resume()  # killed while stopped: nothing is left to continue, and its stop ends here
        proc, limits, buf, cgroup = self.proc, self.limits, self._buf, self._cgroup
        assert proc.stdout is not None
        proc.stdout.close()
        rc_raw = proc.wait()
        leftovers = self._leftovers + self._sweep()
        refused = 0
        if cgroup is not None:
            refused = cgroup.refused()
            leftovers += cgroup.close()
        paused = self.paused_s()
        duration = time.monotonic() - self.began - paused
        timed_out = self._timed_out
        sig = -rc_raw if rc_raw < 0 else None
        if sig is None and rc_raw > 128 and rc_raw - 128 in _SIGNALS:
            sig = rc_raw - 128  # bash reports a child killed by signal N as 128+N
        rc: int | None = None if (timed_out or rc_raw < 0) else rc_raw
        reasons = []
        seen = bytes(buf.head) + bytes(buf.tail)
        if refused:
            reasons.append(f"process limit of {limits.nproc} reached ({refused} forks refused, pids cgroup)")
        elif self._rlimit_nproc is not None and _FORK_REFUSED.search(seen):
            reasons.append(f"process limit reached (RLIMIT_NPROC {self._rlimit_nproc} tasks of this user)")
        cpu_s = _cpu_s(limits, self.timeout_s)
        if (
            sig == signal.SIGXCPU
            or _CPU_HIT.search(seen)
            or (sig == signal.SIGKILL and not timed_out and duration >= cpu_s)
        ):
            reasons.append(f"CPU time limit of {cpu_s} s per process (RLIMIT_CPU)")
        if (sig == signal.SIGXFSZ or _FSIZE_HIT.search(seen)) and limits.file_bytes is not None:
            reasons.append(f"file size limit of {limits.file_bytes} bytes (RLIMIT_FSIZE)")
        if timed_out:
            reasons.append(f"wall-clock limit of {limit:g} s")
        self._outcome = Outcome(
            rc=rc,
            signal=None if timed_out else sig,
            timed_out=timed_out,
            duration_s=duration,
            log=buf.text(),
            log_bytes=buf.total,
            leftovers_killed=leftovers,
            stopped_by="; ".join(reasons) or None,
            sandbox="; ".join(self._notes),
            paused_s=round(paused, 4) if self._pauses else None,
        )
        return self._outcome


#: Signals a shell's 128+N exit status is read as.
_SIGNALS = (4, 6, 7, 8, 9, 11, 15, int(signal.SIGXCPU), int(signal.SIGXFSZ))
