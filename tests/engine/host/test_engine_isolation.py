"""Stage isolation on this machine: process-count bound, no network, no escaped processes, nothing
left outside the work dir, no view of the caller's environment.

Each test runs real commands through sandbox.run. Where the machine refuses a mechanism (no namespaces
for a non-root user without user namespaces, no writable pids cgroup for root), the test is skipped
with the probe's own reason; the mechanisms that must work everywhere (the environment-token sweep,
HOME and TMPDIR inside the work dir) are tested without namespaces as well.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.host import isolation, reaper, sandbox
from beavertui.engine.stage import stages

FULL = sandbox.Limits()
PLAN = isolation.plan_for(True, True, True)
BARE = sandbox.Limits(network="host", private_tmp=False, pid_namespace=False, nproc=None)


def _alive(marker: str) -> list[int]:
    """Live processes (any namespace) whose command line holds ``marker``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            pids.append(int(entry))
    return pids


def _reap(marker: str) -> None:
    for pid in _alive(marker):
        os.kill(pid, 9)


def _mark() -> str:
    """A distinctive sleep length to find a test's processes by."""
    return f"4{uuid.uuid4().int % 10**6:06d}.5"


# ------------------------------------------------------------------------------ resource limits


def test_fork_bomb_is_bounded_and_named(tmp_path: Path) -> None:
    can_bound = reaper.PidsCgroup.create("probe-" + uuid.uuid4().hex, 8)
    if can_bound is None and os.geteuid() == 0:
        pytest.skip("root without a writable pids cgroup: the process count cannot be bounded here")
    if can_bound is not None:
        can_bound.close()
    marker = _mark()
    limits = sandbox.Limits(nproc=48)
    bomb = f"# {marker}\nbomb() {{ bomb | bomb & }}; bomb; sleep 30"
    t0 = time.monotonic()
    out = sandbox.run(bomb, tmp_path, dict(os.environ), timeout_s=3.0, limits=limits)
    assert time.monotonic() - t0 < 10
    assert out.stopped_by is not None and "process limit" in out.stopped_by, out
    assert "wall-clock limit of 3 s" in out.stopped_by
    time.sleep(0.3)
    assert _alive(marker) == []


def test_the_stage_record_carries_the_reason_and_the_sandbox(tmp_path: Path) -> None:
    """What a session saves: stages.run_stage copies the reason and the sandbox line into the StageResult."""
    task = load_corpus(Path(__file__).parents[2] / "data" / "native").get("vec_scale")
    cfg = stages.StageConfig(base_dir=tmp_path, limits=sandbox.Limits(cpu_s=1))
    with stages.workdir(task, "// c\n", cfg) as work:
        res = stages.run_stage(work, "run", "while :; do :; done", 20, cfg)
    assert res.signal == 24 and res.stopped_by == "CPU time limit of 1 s per process (RLIMIT_CPU)"
    assert res.sandbox.startswith(PLAN.describe())


def test_wall_clock_limit_is_named(tmp_path: Path) -> None:
    out = sandbox.run("sleep 30", tmp_path, dict(os.environ), timeout_s=0.5)
    assert out.timed_out and out.stopped_by == "wall-clock limit of 0.5 s"


def test_a_clean_command_has_no_stop_reason(tmp_path: Path) -> None:
    out = sandbox.run("echo fine", tmp_path, dict(os.environ), timeout_s=10.0)
    assert out.rc == 0 and out.stopped_by is None
    assert out.sandbox.startswith("network: ")


# ------------------------------------------------------------------------------ network


@pytest.fixture
def loopback_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 (host namespace) that records what each connection sends."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    got.append(conn.recv(100))
                except OSError:
                    got.append(b"")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], got
    stop.set()
    t.join(2)
    srv.close()


def _connect(port: int) -> str:
    return f"if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo exfil >&3; echo CONNECTED; else echo REFUSED; fi 2>&1"


def test_network_is_isolated_and_host_mode_proves_the_test(
    tmp_path: Path, loopback_server: tuple[int, list[bytes]]
) -> None:
    port, got = loopback_server
    host = sandbox.run(_connect(port), tmp_path, dict(os.environ), 10.0, sandbox.Limits(network="host"))
    assert host.log.strip().endswith("CONNECTED"), host.log
    deadline = time.monotonic() + 3
    while not got and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got == [b"exfil\n"]
    if not PLAN.network:
        pytest.skip(f"no network namespace here: {PLAN.missing}")
    iso = sandbox.run(_connect(port), tmp_path, dict(os.environ), 10.0, FULL)
    assert "REFUSED" in iso.log and "CONNECTED" not in iso.log, iso.log
    assert iso.sandbox.startswith("network: isolated")
    time.sleep(0.2)
    assert got == [b"exfil\n"]  # nothing more arrived


def test_operator_switch_turns_namespaces_off_and_says_so(
    tmp_path: Path, loopback_server: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandbox.NAMESPACES_SWITCH, "0")
    out = sandbox.run(_connect(loopback_server[0]), tmp_path, dict(os.environ), 10.0, FULL)
    assert out.log.strip().endswith("CONNECTED")
    assert "(missing: namespaces switched off by BEAVERTUI_NAMESPACES=0)" in out.sandbox


def test_unavailable_isolation_is_said_not_hidden(tmp_path: Path) -> None:
    """A caller whose PATH has no ``unshare`` gets no namespaces: each stage record and one warning say so."""
    code = (
        "import logging, os, sys; logging.basicConfig(); from beavertui.engine.host import sandbox\n"
        "for _ in range(2):\n"
        "    o = sandbox.run('echo ran', sys.argv[1], {'PATH': '/usr/bin:/bin'}, 10.0)\n"
        "    print(o.log.strip(), '|', o.sandbox)\n"
    )
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    missing = "network NOT isolated, no pid namespace, /tmp NOT private: no unshare executable (util-linux)"
    line = (
        f"ran | network: host; processes: session, cgroup and token sweeps; tmp: shared (missing: {missing})"
    )
    lines = res.stdout.splitlines()
    assert len(lines) == 2 and all(out.startswith(line) for out in lines), lines
    assert res.stderr.count("stage sandbox: " + missing) == 1  # logged once, not per stage


# ------------------------------------------------------------------------------ escaped processes

_ESCAPES = (
    "setsid sleep {m} & ( ( sleep {m} & ) & ) ; (setsid sh -c 'sleep {m} & sleep {m}' &) ; echo started"
)


def test_escaped_processes_die_with_the_stage(tmp_path: Path) -> None:
    if not PLAN.pid:
        pytest.skip(f"no pid namespace here: {PLAN.missing}")
    m = _mark()
    cmd = _ESCAPES.format(m=m) + f"; env -i setsid sleep {m} &"
    try:
        out = sandbox.run(cmd, tmp_path, dict(os.environ), timeout_s=10.0, limits=FULL)
        assert out.rc == 0 and "started" in out.log
        assert out.duration_s < 5
        time.sleep(0.2)
        assert _alive(m) == []
    finally:
        _reap(m)


def test_a_pid_namespace_ends_its_escaped_processes_without_a_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a stage with its own PID namespace has ended, no process of it is left, already when finish
    returns, and finish scanned /proc for none (the session and token sweeps are left out)."""
    if not PLAN.pid:
        pytest.skip(f"no pid namespace here: {PLAN.missing}")
    scans: list[str] = []
    session, tagged = reaper.session_members, reaper.tagged
    monkeypatch.setattr(reaper, "session_members", lambda sid: scans.append("session") or session(sid))
    monkeypatch.setattr(reaper, "tagged", lambda token: scans.append("token") or tagged(token))
    m = _mark()
    try:
        out = sandbox.run(_ESCAPES.format(m=m), tmp_path, dict(os.environ), timeout_s=10.0, limits=FULL)
        assert out.rc == 0 and "started" in out.log and out.leftovers_killed == 0
        assert _alive(m) == []
        assert scans == []
    finally:
        _reap(m)


def test_escaped_processes_are_found_by_token_without_namespaces(tmp_path: Path) -> None:
    m = _mark()
    try:
        out = sandbox.run(_ESCAPES.format(m=m), tmp_path, dict(os.environ), timeout_s=10.0, limits=BARE)
        assert out.sandbox.startswith(
            "network: host; processes: session, cgroup and token sweeps; tmp: shared"
        )
        assert out.rc == 0 and "started" in out.log
        # each of the three background jobs was forked before "started" was printed, so at least three
        # processes carry the token; a job caught before it forked its own children counts as one (seen
        # under load: 3), and what matters is that nothing survives
        assert out.leftovers_killed >= 3
        time.sleep(0.2)
        assert _alive(m) == []
    finally:
        _reap(m)


def test_escaped_processes_die_on_timeout_too(tmp_path: Path) -> None:
    m = _mark()
    try:
        out = sandbox.run(_ESCAPES.format(m=m) + "; sleep 30", tmp_path, dict(os.environ), 1.0, FULL)
        assert out.timed_out
        time.sleep(0.2)
        assert _alive(m) == []
    finally:
        _reap(m)


def test_a_killed_caller_takes_its_stage_with_it(tmp_path: Path) -> None:
    if not PLAN.pid:
        pytest.skip(f"no pid namespace here: {PLAN.missing}")
    if not reaper.death_signal_prefix():
        pytest.skip("setpriv has no --pdeathsig here (util-linux < 2.33)")
    m = _mark()
    code = (  # the marker is assembled at run time, so the caller's own command line does not hold it
        "import os; from beavertui.engine.host import sandbox; "
        f"sandbox.run('sleep ' + {m!r} + ' & sleep ' + {m!r}, {str(tmp_path)!r}, os.environ, 60.0)"
    )
    before = set(_stage_cgroups())
    caller = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while len(_sleeps(m)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_sleeps(m)) == 2
        caller.kill()  # SIGKILL: no cleanup code of the caller runs
        caller.wait()
        deadline = time.monotonic() + 3
        while _alive(f"sleep {m}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(f"sleep {m}") == []  # the sleeps and every wrapper around them
    finally:
        _reap(m)
        for d in set(_stage_cgroups()) - before:  # the killed caller could not remove its cgroup
            with contextlib.suppress(OSError):  # one with processes belongs to someone else: left alone
                if not (d / "cgroup.procs").read_text().split():
                    d.rmdir()


def _sleeps(m: str) -> list[int]:
    def is_sleep(p: int) -> bool:
        try:
            return Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"sleep\0")
        except OSError:  # ended between the listing and the read (a wrapper that has just exec'd or exited)
            return False

    return [p for p in _alive(f"sleep {m}") if is_sleep(p)]


def _stage_cgroups() -> list[Path]:
    parent = reaper._pids_parent()
    return list(parent.glob("beaver-*")) if parent else []


# ------------------------------------------------------------------------------ files outside the work dir


@pytest.mark.parametrize("limits", [FULL, BARE], ids=["isolated", "bare"])
def test_home_tmp_and_caches_live_in_the_work_dir(tmp_path: Path, limits: sandbox.Limits) -> None:
    work = tmp_path / "work"
    work.mkdir()
    name = f"beaver-leak-{uuid.uuid4().hex}"
    env = {**os.environ, "HOME": str(tmp_path / "realhome"), "TMPDIR": str(tmp_path / "realtmp")}
    (tmp_path / "realhome").mkdir()
    (tmp_path / "realtmp").mkdir()
    cmd = (
        f"for v in HOME TMPDIR XDG_CACHE_HOME XDG_CONFIG_HOME CUDA_CACHE_PATH TRITON_CACHE_DIR; do "
        f'  echo "$v=${{!v}}"; echo x > "${{!v}}/{name}"; done; echo x > ~/{name}.2; '
        f'python3 -c "import tempfile; print(tempfile.gettempdir())"'
    )
    out = sandbox.run(cmd, work, env, 20.0, limits)
    assert out.rc == 0, out.log
    lines = out.log.split()
    for var in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "CUDA_CACHE_PATH", "TRITON_CACHE_DIR"):
        value = next(line.split("=", 1)[1] for line in lines if line.startswith(var + "="))
        assert Path(value).is_relative_to(work / sandbox.PRIVATE_ROOT), (var, value)
    assert lines[-1] == str(work / sandbox.PRIVATE_ROOT / "tmp")
    assert list((tmp_path / "realhome").iterdir()) == [] and list((tmp_path / "realtmp").iterdir()) == []
    written = sorted(p.name for p in work.rglob(f"{name}*"))
    assert written == [name] * 6 + [f"{name}.2"]


def test_absolute_tmp_writes_vanish_with_the_stage(tmp_path: Path) -> None:
    if not PLAN.private_tmp:
        pytest.skip(f"no private /tmp here: {PLAN.missing}")
    name = f"beaver-leak-{uuid.uuid4().hex}"
    kept = tmp_path / "kept.txt"  # a file the stage is handed through its environment stays shared
    kept.write_text("before\n")
    env = {**os.environ, "PROFILE_OUT": str(kept)}
    script = f"echo x > /tmp/{name} && echo y > /dev/shm/{name} && echo z > /var/tmp/{name} && ls /tmp/{name}"
    (tmp_path / "candidate.sh").write_text(script + " && echo after >> $PROFILE_OUT\n")
    out = sandbox.run("sh candidate.sh", tmp_path, env, 10.0, FULL)
    assert out.rc == 0, out.log
    assert out.log.strip() == f"/tmp/{name}"
    for d in ("/tmp", "/dev/shm", "/var/tmp"):
        assert not Path(d, name).exists()
    assert kept.read_text() == "before\nafter\n"
    assert "tmp: private" in out.sandbox


# ------------------------------------------------------------------------------ the caller's secrets

#: Counts /proc environ and cmdline files holding the key; the key is kept out of its own command lines
#: (given reversed, searched from a file).
_READ_ALL = (
    "echo {rev} | rev > key.txt; "
    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null | grep -c -F -f key.txt; "
    "grep -l -F -f key.txt /proc/[0-9]*/cmdline 2>/dev/null | wc -l"
)


_NO_NS = "pid_namespace=False, network='host', private_tmp=False"


def _probe_caller(tmp_path: Path, limits: str, setup: str = "") -> list[int]:
    """In a fresh caller started with an API key, run the /proc search as a stage; the two counts."""
    key = f"sk-beaver-{uuid.uuid4().hex}"
    code = (
        f"import os, sys; from beavertui.engine.host import reaper; from beavertui.engine.host import sandbox; {setup or 'pass'}; "
        f"o = sandbox.run({_READ_ALL.format(rev=key[::-1])!r}, sys.argv[1], sandbox.scrub_env(os.environ), 20.0, "
        f"sandbox.Limits({limits})); print(o.log)"
    )
    env = {**os.environ, "OPENAI_API_KEY": key}
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return [int(n) for n in res.stdout.split()]


def test_stage_cannot_read_the_callers_environment_in_a_pid_namespace(tmp_path: Path) -> None:
    """The API key sits in the caller's own initial environment; no stage process may read it."""
    if not PLAN.pid:
        pytest.skip(f"no pid namespace here (other processes' /proc stays visible): {PLAN.missing}")
    assert _probe_caller(tmp_path, "") == [0, 0]
    # the same probe without namespaces, and without the non-dumpable fallback, finds it
    leaked = _probe_caller(tmp_path, _NO_NS, "reaper.hide_caller = lambda: False")
    assert leaked[0] >= 1


def test_without_pid_namespace_a_non_root_caller_hides_its_environment(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("a root stage reads every process's /proc; only the pid namespace hides the caller")
    assert _probe_caller(tmp_path, _NO_NS) == [0, 0]
    leaked = _probe_caller(tmp_path, _NO_NS, "reaper.hide_caller = lambda: False")
    assert leaked[0] >= 1


# ------------------------------------------------------------------------------ GPU still reachable


_KERNEL = r"""
#include <cstdio>
__global__ void twice(int* x) { x[threadIdx.x] = 2 * threadIdx.x; }
int main() {
  int* d; int h[32];
  if (cudaMalloc(&d, sizeof h) != cudaSuccess) { std::puts("no device"); return 1; }
  twice<<<1, 32>>>(d);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  std::printf("sum=%d\n", [&] { int s = 0; for (int v : h) s += v; return s; }());
  return 0;
}
"""


@pytest.mark.gpu
def test_gpu_is_usable_inside_the_namespaces(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(_KERNEL)
    out = sandbox.run(
        "nvidia-smi -L && nvcc -std=c++17 --extended-lambda -o k k.cu && ./k",
        tmp_path,
        dict(os.environ),
        300.0,
        FULL,
    )
    assert out.rc == 0 and "GPU 0" in out.log, (out.sandbox, out.log)
    assert out.log.rstrip().endswith("sum=992"), out.log  # 2 * (0 + 1 + ... + 31)
    assert out.sandbox.startswith("network: isolated; processes: own pid namespace; tmp: private"), (
        out.sandbox
    )
