"""Batch runs on the CPU: protocol files, the run directory, resume after SIGKILL, infrastructure retries.

Sessions use the package's scripted model and the recorded toolchain (real build outputs, replayed), so
the whole batch machinery runs here exactly as on a GPU machine, only faster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beavertui.batch.job import JobSpec, drive
from beavertui.batch.local_executor import Tracker, plan, run_local
from beavertui.batch.protocol_file import BatchFile, expand, find_protocol_file, load_batch_file
from beavertui.batch.rundir import read_infra, read_manifest
from beavertui.cli import main
from beavertui.engine.errors import BeaverError, ToolchainError
from beavertui.engine.session.late import split_late
from beavertui.engine.session.store import read_session
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDINGS = CORPUS.parent / "recorded" / "vec_scale.recordings.jsonl"
RECORDED = f"recorded:{RECORDINGS}"
SCRIPT = "scripted:vec_scale_demo.toml"


def batch(tmp: Path, *extra: str) -> int:
    return main(
        [
            "batch",
            "--corpus",
            str(CORPUS),
            "--models",
            SCRIPT,
            "--toolchain",
            RECORDED,
            "--sessions-dir",
            str(tmp),
            "--quiet",
            *extra,
        ]
    )


def sessions(run_dir: Path) -> list[Path]:
    return sorted(run_dir.rglob("*.jsonl"))


def check_consistent(path: Path) -> list[int]:
    """A finished session: one header, every iteration once with one verdict, one end."""
    header, whole, problem = read_session(path)
    assert header is not None and problem is None, problem
    events, late = split_late(whole)  # the timing lane's appends after the loop's end: each timing once
    assert [e.kind for e in late if e.kind != "timing"] == ["verdict", "end"] * (
        len(late) // 2 if late else 0
    )
    verdicts = [e.iteration for e in events if e.kind == "verdict"]
    assert verdicts == list(range(1, len(verdicts) + 1)), verdicts
    assert [e.kind for e in events].count("end") == 1 and events[-1].kind == "end"
    return verdicts


def test_bundled_protocol_files_expand_to_their_sweeps() -> None:
    sizes = {}
    for name in ("legacy", "legacy-gate", "legacy-method", "legacy-feedback", "legacy-history"):
        spec = load_batch_file(find_protocol_file(name))
        protos = expand(spec)
        sizes[name] = len(protos)
        assert len({p.slug for p in protos}) == len(protos)
    assert sizes == {
        "legacy": 1,
        "legacy-gate": 4,
        "legacy-method": 2,
        "legacy-feedback": 5,
        "legacy-history": 4,
    }
    feedback = [p.protocol.feedback for p in expand(load_batch_file(find_protocol_file("legacy-feedback")))]
    assert feedback == ["L0", "L1", "L2", "L3", "L4"]


def test_sweep_is_a_cross_product_and_bad_axes_are_named() -> None:
    spec = BatchFile(protocol={"budget": 3}, sweep={"gate": [0.0, 0.7], "history": [1, 2, 3]})
    protos = expand(spec)
    assert len(protos) == 6
    assert {(p.protocol.gate, p.protocol.history) for p in protos} == {
        (g, h) for g in (0.0, 0.7) for h in (1, 2, 3)
    }
    assert all(p.protocol.budget == 3 for p in protos)
    with pytest.raises(BeaverError, match="colour: not a protocol field"):
        expand(BatchFile(sweep={"colour": ["red"]}))
    with pytest.raises(BeaverError, match="feedback"):
        expand(BatchFile(sweep={"feedback": ["L9"]}))
    with pytest.raises(BeaverError, match="no such protocol file"):
        find_protocol_file("nonexistent-protocol")


def test_batch_writes_layout_and_manifest_and_resume_redoes_nothing(tmp_path: Path) -> None:
    assert batch(tmp_path, "--protocol", "legacy-history", "--samples", "2", "--run-id", "r1") == 0
    run_dir = tmp_path / "r1"
    files = sessions(run_dir)
    assert len(files) == 4 * 2  # 4 history values x 1 task x 2 samples
    assert all(f.name in ("vec_scale__s0.jsonl", "vec_scale__s1.jsonl") for f in files)
    m = read_manifest(run_dir)
    assert m.status == "finished" and m.tasks == ["vec_scale"] and len(m.protocols) == 4
    assert m.summary["done"] == 8 and m.summary["passed"] == 8 and m.summary["skipped"] == 0
    before = {f: f.read_bytes() for f in files}
    assert batch(tmp_path, "--resume", str(run_dir)) == 0
    assert {f: f.read_bytes() for f in sessions(run_dir)} == before
    assert read_manifest(run_dir).summary["skipped"] == 8
    # a second run into the same folder is refused with a hint
    assert batch(tmp_path, "--protocol", "legacy-history", "--run-id", "r1") == 2


def test_resume_after_sigkill_finishes_without_duplicates(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "beavertui",
        "batch",
        "--corpus",
        str(CORPUS),
        "--models",
        SCRIPT,
        "--toolchain",
        RECORDED,
        "--sessions-dir",
        str(tmp_path),
        "--run-id",
        "k",
        "--protocol",
        "feedback",
        "--samples",
        "30",
        "--jobs",
        "2",
        "--quiet",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    run_dir = tmp_path / "k"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(sessions(run_dir)) < 6:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert read_manifest(run_dir).status == "running"  # killed: never marked finished
    done_before = sum(
        1 for f in sessions(run_dir) if read_session(f)[1][-1:] and read_session(f)[1][-1].kind == "end"
    )
    assert batch(tmp_path, "--resume", str(run_dir)) == 0
    files = sessions(run_dir)
    assert len(files) == 5 * 30
    for f in files:
        assert check_consistent(f) == [1, 2, 3]  # the demo repairs at iteration 3, whatever was cut
    m = read_manifest(run_dir)
    assert m.status == "finished" and m.summary["skipped"] >= done_before and len(m.resumed) == 1


class FlakyToolchain:
    """The recorded toolchain, but the first ``fail`` attempts raise an infrastructure error."""

    def __init__(self, fail: int) -> None:
        from beavertui.engine.toolchain.recorded import RecordedToolchain

        self.inner = RecordedToolchain.load(RECORDINGS)
        self.fail = fail

    def gpu(self):  # type: ignore[no-untyped-def]
        return None

    def attempt(self, task, code, options):  # type: ignore[no-untyped-def]
        if self.fail > 0:
            self.fail -= 1
            raise ToolchainError("GPU lost: device fell off the bus", source="gpu")
        yield from self.inner.attempt(task, code, options)


def _one_job(tmp_path: Path, retries: int, fail: int) -> tuple[Path, object, list[dict[str, object]]]:
    from beavertui.batch.protocol_file import ModelSpec
    from beavertui.batch.rundir import ProtocolEntry, RunManifest
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.session.protocol import Protocol

    manifest = RunManifest(
        run_id="f",
        name="f",
        created="now",
        corpus=str(CORPUS),
        tasks=["vec_scale"],
        # the in-loop gate: the demo's slow repair is told it is too slow and the third attempt passes
        protocols=[ProtocolEntry(slug="p", protocol=Protocol(gate_mode="in_loop"))],
        models=[ModelSpec(model=SCRIPT)],
        retries=retries,
    )
    run_dir = tmp_path / "f"
    jobs = plan(manifest, run_dir)
    tasks = {t.id: t for t in load_corpus(CORPUS).tasks}
    out = run_local(
        jobs, tasks, FlakyToolchain(fail), run_dir, parallel=1, retries=retries, tracker=Tracker(jobs)
    )
    return jobs[0].path, out[jobs[0].path], read_infra(run_dir)


def test_infrastructure_failure_is_retried_logged_and_not_scored(tmp_path: Path) -> None:
    path, out, infra = _one_job(tmp_path, retries=1, fail=1)
    assert out.status == "ran" and out.passed  # type: ignore[attr-defined]
    assert [r["retried"] for r in infra] == [True]
    assert "fell off the bus" in str(infra[0]["detail"])
    assert check_consistent(path) == [1, 2, 3]
    # the retried failure left no trace in the session: nothing to exclude from the scores
    rows = [json.loads(x) for x in run_cli("export", path, check=True).stdout.splitlines()]
    assert [r["infra_error"] for r in rows] == [False, False, False]


def test_infrastructure_failure_past_retries_is_recorded_and_excluded(tmp_path: Path) -> None:
    path, out, infra = _one_job(tmp_path, retries=0, fail=5)
    assert out.status == "ran" and not out.passed and out.stop_reason == "error"  # type: ignore[attr-defined]
    assert [r["retried"] for r in infra] == [False]
    from beavertui.engine.metrics.attempts import table_from_run
    from beavertui.engine.metrics.compute import compute_groups

    (g,) = compute_groups(table_from_run(path))
    assert g.n_infra_excluded == 1 and g.n_attempts == 0 and g.n_tasks == 0


def test_a_session_cut_mid_attempt_restarts_that_attempt(tmp_path: Path) -> None:
    assert batch(tmp_path, "--protocol", "legacy", "--run-id", "c") == 0
    (path,) = sessions(tmp_path / "c")
    lines = path.read_text().splitlines(keepends=True)
    kinds = [json.loads(x)["kind"] for x in lines]
    cut = kinds.index("build", kinds.index("request", kinds.index("verdict")))  # inside iteration 2
    path.write_text("".join(lines[:cut]) + lines[cut][:25])  # and a torn last line
    assert batch(tmp_path, "--resume", str(tmp_path / "c")) == 0
    assert check_consistent(path) == [1, 2, 3]
    text = path.read_text()
    assert text.count('"kind":"header"') == 1


def test_gpu_pool_takes_a_failing_gpu_out() -> None:
    from beavertui.batch.gpu_pool import GpuPool

    pool = GpuPool(["0", "1"], shared=2, fail_limit=3)
    for _ in range(3):
        with pool.hold() as g:
            assert g.index == "1"  # a run goes to a GPU other than the timing GPU (the first)
        pool.report(g, ok=False, detail="sticky error")
    assert [g.healthy for g in pool.gpus] == [True, False]
    with pool.hold() as g:
        assert g.index == "0"
    pool.report(pool.gpus[0], ok=False)
    pool.report(pool.gpus[0], ok=True)  # a success resets the count
    assert pool.gpus[0].consecutive_failures == 0
    for _ in range(3):
        pool.report(pool.gpus[0], ok=False)
    with pytest.raises(ToolchainError, match="no healthy GPU"), pool.hold():
        pass


def test_gpu_pool_bounds_shared_runs_and_makes_timing_exclusive() -> None:
    import threading

    from beavertui.batch.gpu_pool import GpuPool

    pool = GpuPool(["0"], shared=2)
    peak = {"shared": 0, "overlap_with_exclusive": 0}
    lock = threading.Lock()
    active = {"shared": 0, "exclusive": 0}

    def work(exclusive: bool) -> None:
        with pool.hold(exclusive=exclusive):
            with lock:
                key = "exclusive" if exclusive else "shared"
                active[key] += 1
                peak["shared"] = max(peak["shared"], active["shared"])
                if active["exclusive"] and (active["shared"] or active["exclusive"] > 1):
                    peak["overlap_with_exclusive"] += 1
            time.sleep(0.01)
            with lock:
                active[key] -= 1

    threads = [threading.Thread(target=work, args=(i % 4 == 0,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak["shared"] == 2
    assert peak["overlap_with_exclusive"] == 0
    assert pool.busy_fraction(1.0)["0"] > 0.0


def test_job_spec_paths_follow_the_layout(tmp_path: Path) -> None:
    from beavertui.batch.rundir import session_path

    p = session_path(tmp_path, "org/model:7b", "iterative-K5", "task/1", 3)
    assert p == tmp_path / "org_model_7b" / "iterative-K5" / "task_1__s3.jsonl"
    assert isinstance(JobSpec, type) and callable(drive)


def test_start_until_starts_nothing_after_its_window_and_the_rest_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--start-until: once its window has closed no session starts, the one in flight finishes, the exit
    code says the batch is not done (130, as for an interrupt), and --resume finishes the rest with nothing lost or redone."""
    import beavertui.service.batch as service

    run_dir = tmp_path / "w"
    # the window closes the moment the first session has written its file (the session is then in flight)
    monkeypatch.setattr(service._Deadline, "is_set", lambda self: bool(sessions(run_dir)))
    assert batch(tmp_path, "--samples", "3", "--jobs", "1", "--run-id", "w", "--start-until", "5") == 130
    err = capsys.readouterr().err
    assert "no session started after 5 s (--start-until)" in err
    assert f"2 sessions wait unfinished: continue with --resume {run_dir}" in err
    files = sessions(run_dir)
    assert len(files) == 1 and check_consistent(files[0])  # started in the window, finished after it
    first = files[0].read_bytes()
    assert read_manifest(run_dir).status == "interrupted"
    monkeypatch.undo()
    assert batch(tmp_path, "--resume", str(run_dir)) == 0
    assert files[0].read_bytes() == first and len(sessions(run_dir)) == 3
    assert read_manifest(run_dir).summary["skipped"] == 1
    assert all(check_consistent(f) for f in sessions(run_dir))


def test_start_until_zero_starts_nothing_and_bad_values_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert batch(tmp_path, "--run-id", "z", "--start-until", "0") == 130
    assert sessions(tmp_path / "z") == []
    assert "1 sessions wait unfinished" in capsys.readouterr().err
    for bad in ("soon", "-1", "nan"):
        assert batch(tmp_path, "--start-until", bad) == 2
    assert "--start-until" in capsys.readouterr().err


def test_a_batch_piped_to_a_file_writes_its_summary_alone_on_standard_output(tmp_path: Path) -> None:
    """`beavertui batch ... --json > summary.json` (or --format csv) wrote the progress line '[0m00s] sessions
    5/5 (passed ...' above the summary on standard output, so the file was no JSON and no CSV; only --quiet
    kept it out. Off a terminal the progress lines go to standard error now, with the batch's other lines."""
    import csv
    import io

    json_run = run_cli("batch", "--demo", "--run-id", "j", "--sessions-dir", tmp_path, "--json", cwd=tmp_path)
    assert json_run.returncode == 0, json_run.stderr
    doc = json.loads(json_run.stdout)
    assert sum(g["sessions"] for g in doc["groups"]) > 0
    assert "sessions" in json_run.stderr and "(passed " in json_run.stderr  # the progress, where the log goes
    csv_run = run_cli(
        "batch", "--demo", "--run-id", "c", "--sessions-dir", tmp_path, "--format", "csv", cwd=tmp_path
    )
    assert csv_run.returncode == 0, csv_run.stderr
    rows = list(csv.reader(io.StringIO(csv_run.stdout)))
    assert rows[0][:2] == ["model", "protocol"] and len({len(r) for r in rows}) == 1, rows[:2]


def test_a_replay_says_before_the_run_which_tasks_it_has_no_outcome_for(tmp_path: Path) -> None:
    """`batch --toolchain demo` over tasks the demos never ran (or `reproduce --corpus RELEASE --toolchain
    demo`) asked the model for every attempt, paid for, then failed each as an unrecorded candidate; only the
    tables said so, after the run. Which tasks the replay knows nothing of is said before the first call."""
    p = run_cli(
        "batch", "--models", "scripted:@reference", "--tasks", "scan_*,transpose_00", "--toolchain", "demo",
        "--dry-run", "--sessions-dir", tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    (line,) = [ln for ln in p.stderr.splitlines() if "no recorded outcome" in ln]
    assert line.startswith(
        "beavertui: 2 of 4 task(s) have no recorded outcome in --toolchain demo (scan_00, scan_02): every "
        "candidate of theirs fails to build as an unrecorded candidate"
    ), line
    known = run_cli(
        "batch", "--models", "scripted:@reference", "--tasks", "transpose_00", "--toolchain", "demo", "--dry-run",
        "--sessions-dir", tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert known.returncode == 0 and "no recorded outcome" not in known.stderr
