"""The Ray executor on a real local Ray instance (CPU only), with the scripted model and recorded toolchain.

Ray tasks run the sessions in worker processes and stream every event back; the run directory must hold
exactly what the local executor writes (same attempts, same outcomes), and resuming through Ray must
redo nothing.
"""

from __future__ import annotations

import json
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
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


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
