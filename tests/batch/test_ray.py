"""The Ray executor on a real local Ray instance (CPU only), with the scripted model and recorded toolchain.

Ray tasks run the sessions in worker processes and stream every event back; the run directory must hold
exactly what the local executor writes (same attempts, same outcomes), and resuming through Ray must
redo nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from beavertui.batch.local_executor import Tracker, plan, run_local
from beavertui.batch.protocol_file import ModelSpec
from beavertui.batch.ray_executor import run_ray
from beavertui.batch.rundir import ProtocolEntry, RunManifest
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.metrics.attempts import export_rows
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.toolchain.recorded import RecordedToolchain

pytestmark = pytest.mark.slow  # a Ray instance starts in tens of seconds: run the module early

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDINGS = CORPUS / "vec_scale.recordings.jsonl"


def manifest(run_id: str) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        name="ray",
        created="now",
        corpus=str(CORPUS),
        tasks=["vec_scale"],
        samples=2,
        protocols=[
            # the in-loop gate: at L1 the demo's slow repair is told to try again and passes at 3
            ProtocolEntry(slug="l1", protocol=Protocol(feedback="L1", gate_mode="in_loop")),
            ProtocolEntry(slug="l3-p0", protocol=Protocol(feedback="L3", gate=0.0, gate_mode="in_loop")),
        ],
        models=[ModelSpec(model="scripted:vec_scale_demo.toml")],
    )


def comparable(run_dir: Path) -> list[str]:
    rows = []
    for r in export_rows(run_dir):
        r.pop("run_id")
        rows.append(json.dumps(r, sort_keys=True))
    return sorted(rows)


@pytest.fixture(scope="module")
def ray_instance():  # type: ignore[no-untyped-def]
    ray = pytest.importorskip("ray")  # here, not at collection: importing Ray costs 0.5 s of CPU a worker
    # an instance of its own: without address="local", ray.init joins any cluster running on this machine
    # (tests/batch/test_ray_nodes.py makes one) and refuses num_cpus there
    # a new local instance turns Ray's token check on for this whole process (ray.init sets RAY_AUTH_MODE=token
    # in os.environ): put back what was there, or a cluster a later test starts in this process checks tokens
    before = os.environ.get("RAY_AUTH_MODE")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    if before is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = before


def test_ray_executor_streams_sessions_into_the_run_dir(tmp_path: Path, ray_instance: None) -> None:
    m = manifest("viaray")
    run_dir = tmp_path / "viaray"
    jobs = plan(m, run_dir)
    tracker = Tracker(jobs)
    out = run_ray(jobs, m, run_dir, tracker, toolchain=f"recorded:{RECORDINGS}", parallel=2)
    assert len(out) == 4 and all(o.status == "ran" and o.passed for o in out.values())
    t = tracker.totals()
    assert t["done"] == 4 and t["attempts"] == 2 * 3 + 2 * 2  # L1: 3 attempts; gate 0: passes at 2
    # the same batch through the local executor writes the same attempts
    local_dir = tmp_path / "local"
    jobs_local = plan(manifest("local"), local_dir)
    tasks = {t.id: t for t in load_corpus(CORPUS).tasks}
    run_local(
        jobs_local,
        tasks,
        RecordedToolchain.load(RECORDINGS),
        local_dir,
        parallel=2,
        retries=1,
        tracker=Tracker(jobs_local),
    )
    assert comparable(run_dir) == comparable(local_dir)
    # resuming through Ray redoes nothing
    before = {p: p.read_bytes() for p in run_dir.rglob("*.jsonl")}
    again = run_ray(jobs, m, run_dir, Tracker(jobs), toolchain=f"recorded:{RECORDINGS}", parallel=2)
    assert all(o.status == "skipped" for o in again.values())
    assert {p: p.read_bytes() for p in run_dir.rglob("*.jsonl")} == before


def _rows_without_ids(run_dir: Path) -> list[str]:
    rows = []
    for r in export_rows(run_dir):
        for key in ("run_id", "session_id"):
            r.pop(key, None)
        rows.append(json.dumps(r, sort_keys=True))
    return sorted(rows)


def test_a_demo_batch_on_ray_needs_no_gpu_and_agrees_with_the_local_one(
    tmp_path: Path, ray_instance: None
) -> None:
    """The README's road without a GPU, on Ray: the demo toolchain replays recorded outcomes, so its sessions
    ask Ray for no GPU (they asked for one and waited forever on a cluster without GPUs), and --quiet prints
    no progress (it printed a progress line). The sessions time inside their loops, as --inline-timing does
    here: the same attempts; the metrics equal the default local run's, whose timing lane appends the same
    timings after each loop."""
    from tests.cli_in_process import run_cli

    ray = run_cli("batch", "--demo", "--executor", "ray", "--quiet", "--run-id", "ray", "--sessions-dir", tmp_path,
                  cwd=tmp_path, timeout=120)  # fmt: skip
    assert ray.returncode == 0, ray.stderr[-600:]
    assert "sessions 5/5" not in ray.stdout  # the progress line; the summary table says "5/5" alone
    inline = run_cli("batch", "--demo", "--inline-timing", "--quiet", "--run-id", "inline", "--sessions-dir", tmp_path,
                     cwd=tmp_path, timeout=120)  # fmt: skip
    lane = run_cli(
        "batch",
        "--demo",
        "--quiet",
        "--run-id",
        "lane",
        "--sessions-dir",
        tmp_path,
        cwd=tmp_path,
        timeout=120,
    )
    assert inline.returncode == 0 and lane.returncode == 0
    assert _rows_without_ids(tmp_path / "ray") == _rows_without_ids(tmp_path / "inline")
    metrics = [run_cli("metrics", tmp_path / r, "--format", "json", timeout=120) for r in ("ray", "lane")]
    assert metrics[0].returncode == 0 and metrics[0].stdout == metrics[1].stdout


def test_the_local_toolchain_on_a_cluster_without_gpus_is_one_line_before_anything_is_written(
    tmp_path: Path, ray_instance: None
) -> None:
    """A session of the local toolchain holds one GPU of a worker: on a cluster with none it would wait for
    ever. The driver need not have a GPU (it writes the session files; the workers build and run): before,
    its own missing GPU refused the batch, so a driver on a node without GPUs could not use a GPU cluster."""
    from tests.cli_in_process import run_cli

    p = run_cli("batch", "--executor", "ray", "--models", "scripted:@reference", "--tasks", "scan_01", "--run-id", "r",
                "--sessions-dir", tmp_path, cwd=tmp_path, timeout=120)  # fmt: skip
    assert p.returncode == 2, p.stderr[-600:]
    assert p.stderr.startswith("beavertui: the Ray cluster has no GPU for the local toolchain"), p.stderr[
        -600:
    ]
    assert len(p.stderr.splitlines()) == 1 and not (tmp_path / "r").exists()


def test_a_failure_on_a_worker_is_one_line_naming_its_node(tmp_path: Path, ray_instance: None) -> None:
    """A corpus missing on a worker's node (every node must see it at the run's path) fails its sessions with
    the worker's own error in one line; it was Ray's whole remote traceback, escape codes and all."""
    from beavertui.batch.rundir import read_infra

    m = manifest("gone")
    m.corpus = str(tmp_path / "no-corpus-here")
    run_dir = tmp_path / "gone"
    run_dir.mkdir()
    jobs = plan(m, run_dir)[:1]
    out = run_ray(jobs, m, run_dir, Tracker(jobs), toolchain=f"recorded:{RECORDINGS}", parallel=1)
    (only,) = out.values()
    assert only.status == "failed"
    (detail,) = [r["detail"] for r in read_infra(run_dir)]
    assert "\n" not in detail and "\x1b" not in detail, detail
    assert detail.startswith("WorkerFailure: on Ray node "), detail
    assert detail.endswith(f"BeaverError: corpus {m.corpus}: not a folder"), detail


def test_the_bundled_corpus_is_each_nodes_own(
    tmp_path: Path, ray_instance: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node's beavertui may be installed at another path than the driver's: its workers read the bundled
    corpus from their own package. They were sent the driver's path, absent there, and every session failed
    ("corpus ...: not a folder"). The driver's package is made to live elsewhere here (its bundled corpus at a
    path no node has); the workers are real."""
    from beavertui.engine import bundled

    task = bundled.demo_tasks()[0]
    elsewhere = tmp_path / "site-packages" / "beavertui" / "_bundled" / "corpus"
    monkeypatch.setattr(bundled, "corpus", lambda: elsewhere)
    m = RunManifest(
        run_id="bundled",
        name="ray",
        created="now",
        corpus=str(elsewhere),
        tasks=[task],
        samples=1,
        protocols=[ProtocolEntry(slug="paper", protocol=Protocol())],
        models=[ModelSpec(model="scripted:@demo")],
    )
    run_dir = tmp_path / "bundled"
    jobs = plan(m, run_dir)
    (only,) = run_ray(jobs, m, run_dir, Tracker(jobs), toolchain="demo", parallel=1).values()
    assert only.status == "ran" and only.attempts > 0, only


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_address_where_no_cluster_listens_is_one_line_at_once(tmp_path: Path) -> None:
    """Ray's own connect retried for minutes (over 3 minutes seen) and ended in a traceback, exit 1, with the
    run folder written; now one line, exit 2, nothing written."""
    import subprocess
    import sys

    address = f"127.0.0.1:{_free_port()}"
    p = subprocess.run(
        [sys.executable, "-m", "beavertui", "batch", "--demo", "--executor", "ray", "--address", address,
         "--run-id", "r", "--sessions-dir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert p.returncode == 2, p.stderr[-600:]
    assert p.stderr.endswith(
        f"beavertui: cannot reach the Ray cluster at {address} (Connection refused): start its head with "
        "`ray start --head`, or give the address it printed\n"
    ), p.stderr[-600:]
    assert not (tmp_path / "r").exists()


def test_ctrl_c_stops_a_ray_batch_at_once_and_says_how_to_go_on(tmp_path: Path, ray_instance: None) -> None:
    """Ctrl-C waited for every session in flight (each on its endpoint, minutes with a real model), then left
    run.json "running" with no word on how to continue; now it ends at once as the local executor does:
    exit 130, the run marked interrupted, the cut sessions named, and the command that continues it."""
    import signal
    import subprocess
    import sys
    import threading
    import time

    import ray

    from beavertui.engine import bundled
    from tests.loopback_endpoint import Endpoint, completion

    release = threading.Event()

    def answer(model: str, body: dict[str, object], headers: dict[str, str]) -> tuple[str, object]:
        release.wait(120)  # the replies wait until the test is done: the sessions stay in flight
        return ("json", completion(model, "no code"))

    with Endpoint(answer) as ep:
        cmd = [sys.executable, "-m", "beavertui", "batch", "--models", "m1", "--base-url", ep.url, "--no-stream",
               "--toolchain", f"recorded:{bundled.demo_sessions()}", "--tasks", "scan_01,softmax_00", "--executor", "ray",
               "--address", ray.get_runtime_context().gcs_address, "--run-id", "r", "--sessions-dir", str(tmp_path),
               "--quiet"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "token"}
        proc = subprocess.Popen(
            cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 120
            while not ep.requests and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert ep.requests, (
                proc.stderr.read() if proc.poll() is not None and proc.stderr else "no request"
            )
            proc.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            _out, err = proc.communicate(timeout=60)
            took = time.monotonic() - t0
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err[-800:]
    assert took < 20, took  # the endpoint still held every reply: nothing was waited for
    assert json.loads((tmp_path / "r" / "run.json").read_text())["status"] == "interrupted"
    assert f"continue with --resume {tmp_path / 'r'}" in err, err[-800:]
    assert "beavertui: cut: " in err
