"""A batch killed with SIGKILL at random points and resumed, again and again, ends with exactly the attempts
of the same batch run without interruption: none lost, none duplicated, no torn line left behind.

The batch runs through the real CLI in a subprocess, with scripted models (one of which hits an endpoint
failure that is retried, then recorded) and the recorded toolchain, so it needs no GPU and takes seconds.
Kill points are drawn from a seeded generator (``BEAVERTUI_KILL_SEED`` overrides the seed) so a failure
can be replayed. A kill point is a point in the batch's progress, not a time: the number of session bytes
written, a fraction of what the uninterrupted run writes, so a loaded machine slows the batch down but
moves no kill. Each test prints one ``reliability:`` line with what it did (``pytest -s`` shows it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beavertui.batch.rundir import read_infra, read_manifest
from beavertui.cli import main
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import SessionEnd, Verdict
from beavertui.engine.session.late import split_late
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import read_session

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDED = f"recorded:{CORPUS / 'vec_scale.recordings.jsonl'}"
DEMO = "scripted:vec_scale_demo.toml"
SEED = int(os.environ.get("BEAVERTUI_KILL_SEED", "20261130"))
KILLS = int(os.environ.get("BEAVERTUI_KILLS", "7"))


def flaky_script(folder: Path) -> str:
    """A model whose first reply is the demo's first and whose second call fails as an endpoint error."""
    demo = tomllib.loads(
        (ROOT / "beavertui" / "engine" / "models" / "scripts" / "vec_scale_demo.toml").read_text()
    )
    path = folder / "flaky.json"
    path.write_text(
        json.dumps({"replies": [demo["reply"][0]["content"], {"error": "connection reset by peer"}]})
    )
    return f"scripted:{path}"


def cli(sessions: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "beavertui",
        "batch",
        "--corpus",
        str(CORPUS),
        "--toolchain",
        RECORDED,
        "--sessions-dir",
        str(sessions),
        "--quiet",
        *args,
    ]


Key = tuple[str, str, str, int]
"""(model folder, protocol folder, task file stem, iteration)."""
Attempt = tuple[str, str, bool, tuple[tuple[str, str], ...]]
"""Candidate hash, verdict category, success, infrastructure failures (source, detail)."""


def attempts_of(run_dir: Path) -> tuple[dict[Key, Attempt], dict[str, tuple[Any, ...]]]:
    """Per attempt as the metrics see it (a re-sent request starts its iteration afresh); per session,
    how it ended. Fails on a duplicated verdict, a session without exactly one end, or an unreadable line.
    """
    attempts: dict[Key, Attempt] = {}
    ends: dict[str, tuple[Any, ...]] = {}
    for path in sorted(run_dir.rglob("*.jsonl")):
        if path.name == "infra.jsonl":
            continue
        rel = path.relative_to(run_dir)
        header, whole, problem = read_session(path)
        assert header is not None and problem is None, f"{rel}: {problem}"
        assert path.read_bytes().endswith(b"\n"), f"{rel}: torn last line"
        events, late = split_late(whole)  # the timing lane's appends: each pending timing once
        late_its = [e.iteration for e in late if isinstance(e, Verdict)]
        assert len(late_its) == len(set(late_its)), f"{rel}: a late timing twice: {late_its}"
        verdicts = [e.iteration for e in events if isinstance(e, Verdict)]
        assert len(verdicts) == len(set(verdicts)), f"{rel}: a verdict twice: {verdicts}"
        assert [e.kind for e in events].count("end") == 1 and isinstance(events[-1], SessionEnd), rel
        state = fold(header, whole)  # as metrics see it: the late timings folded in
        for a in state.attempts:
            if a.verdict is None and not a.infra_errors:
                continue
            code = a.candidate.code if a.candidate is not None else None
            attempts[(rel.parts[0], rel.parts[1], rel.stem, a.iteration)] = (
                hashlib.sha256((code or "").encode()).hexdigest()[:16],
                a.verdict.category if a.verdict is not None else "-",
                bool(a.verdict and a.verdict.success),
                tuple((e.source, e.detail) for e in a.infra_errors),
            )
        end = whole[-1]
        assert isinstance(end, SessionEnd) and end.timing_pending == 0, rel
        ends[str(rel)] = (end.stop_reason, end.iterations, end.success)
    return attempts, ends


def infra_counts(run_dir: Path) -> tuple[int, int]:
    rows = read_infra(run_dir)
    return sum(1 for r in rows if r.get("retried")), sum(1 for r in rows if not r.get("retried"))


def written(run_dir: Path) -> int:
    """Bytes of every session file under a run directory (the batch's progress, read without parsing)."""
    total = 0
    stack = [str(run_dir)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.name.endswith(".jsonl") and e.name != "infra.jsonl":
                    with contextlib.suppress(OSError):
                        total += e.stat().st_size
    return total


def kill_points(rng: random.Random, total: int, kills: int) -> list[int]:
    """Increasing byte counts at which to kill: one drawn in each of ``kills`` equal slices of 3-92% of
    ``total``, so no two kills can land at the same point."""
    lo, span = 0.03, 0.89 / kills
    return [int(total * rng.uniform(lo + i * span, lo + (i + 1) * span)) for i in range(kills)]


def damage(run_dir: Path) -> tuple[int, int, int]:
    """(sessions cut before their end, sessions whose last line is torn, sessions finished) in a killed
    run, each session file read once."""
    cut = torn = done = 0
    for path in run_dir.rglob("*.jsonl"):
        if path.name == "infra.jsonl":
            continue
        _h, events, problem = read_session(path)
        ended = bool(events) and isinstance(events[-1], SessionEnd)
        cut += not ended
        torn += problem is not None
        done += ended and "__s" in path.name
    return cut, torn, done


@pytest.mark.slow
def test_repeated_sigkill_and_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    models = ["--models", DEMO, "scripted:@alternate", flaky_script(tmp_path)]
    batch = [*models, "--protocol", "legacy-feedback", "--samples", "30", "--jobs", "3"]

    t0 = time.monotonic()
    ref = subprocess.run(cli(tmp_path, *batch, "--run-id", "ref"), capture_output=True, text=True)
    ref_s = time.monotonic() - t0
    assert ref.returncode == 3, ref.stderr  # the flaky model's sessions ended by its failure: no verdict
    want, want_ends = attempts_of(tmp_path / "ref")
    assert len(want_ends) == 3 * 5 * 30
    assert any(reason == "error" for reason, *_ in want_ends.values())  # the retried endpoint failure

    run_dir = tmp_path / "k"
    points = kill_points(rng, written(tmp_path / "ref"), KILLS)
    kills = cuts = torn = resumes = 0
    progress: list[int] = []  # sessions finished when each kill landed
    command = cli(tmp_path, *batch, "--run-id", "k")
    for _round in range(KILLS + 1):
        last = _round == KILLS  # the final resume runs to the end
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        if not last:
            # wait until this process has (re)written the manifest, then until the batch has written
            # as far as this round's kill point
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                with contextlib.suppress(BeaverError, OSError, ValueError):
                    if len(read_manifest(run_dir).resumed) == resumes:
                        break
                time.sleep(0.005)
            while time.monotonic() < deadline and proc.poll() is None and written(run_dir) < points[_round]:
                time.sleep(0.01)  # each look scans the run folder: a tighter loop takes the batch's CPU
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                c, t, done = damage(run_dir)
                cuts += c
                torn += t
                progress.append(done)
        _out, err = proc.communicate(timeout=120)
        if not last and proc.returncode == -signal.SIGKILL:
            if read_manifest(run_dir).status == "finished":
                break  # killed on its way out, after the run was complete
            command = cli(tmp_path, "--resume", str(run_dir))
            resumes += 1
            continue
        assert proc.returncode == 3, err.decode()  # as the uninterrupted run's
        break

    got, got_ends = attempts_of(run_dir)
    assert got == want  # none lost, none duplicated, same candidates and verdicts
    assert got_ends == want_ends
    assert read_manifest(run_dir).status == "finished"
    # nothing left over from a cut write: the same files as the uninterrupted run
    files = {p.relative_to(run_dir) for p in run_dir.rglob("*") if p.is_file()}
    assert files == {p.relative_to(tmp_path / "ref") for p in (tmp_path / "ref").rglob("*") if p.is_file()}
    # every endpoint failure counted once per try, however often the run was cut
    assert infra_counts(run_dir) == infra_counts(tmp_path / "ref")
    assert kills >= 5, f"only {kills} kills landed (the batch took {ref_s:.1f} s uninterrupted)"
    assert len(set(progress)) >= 3, f"the kills did not land at different points: {progress}"
    print(
        f"\nreliability: kill-resume seed={SEED}: {kills} SIGKILLs, {resumes} resumes, {len(want_ends)} "
        f"sessions, {len(want)} attempts identical to an uninterrupted run ({ref_s:.1f} s); "
        f"{cuts} sessions found cut and {torn} torn last lines after the kills, all repaired; "
        f"sessions finished at each kill: {progress}"
    )


# ---------------------------------------------------------------------------- every cut point, in process


def _one_session_run(tmp: Path, run_id: str) -> Path:
    rc = main(
        [
            "batch",
            "--corpus",
            str(CORPUS),
            "--models",
            flaky_script(tmp),
            DEMO,
            "--toolchain",
            RECORDED,
            "--sessions-dir",
            str(tmp),
            "--run-id",
            run_id,
            "--quiet",
        ]
    )
    assert rc == 3  # its session of the model that fails ended by that failure, with no verdict
    return tmp / run_id


@pytest.fixture(scope="module")
def one_session_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    """A one-session run and a second, separate run of the same batch, with the first's attempts: made once
    for every example below, which only reads them (each example cuts a copy of the second)."""
    tmp = tmp_path_factory.mktemp("cut")
    ref = _one_session_run(tmp, "ref")
    (tmp / "pristine").mkdir()
    pristine = _one_session_run(tmp, "k").rename(tmp / "pristine" / "k")
    return tmp, pristine, attempts_of(ref)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_session_cut_at_any_byte_resumes_to_the_same_attempts(
    one_session_runs: tuple[Path, Path, Any], data: st.DataObject
) -> None:
    tmp, pristine, want = one_session_runs
    run = tmp / "k"
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(pristine, run, symlinks=True)  # a finished run, as a fresh batch run leaves it
    files = sorted(p for p in run.rglob("*.jsonl") if p.name != "infra.jsonl")
    path = data.draw(st.sampled_from(files), label="session")
    whole = path.read_bytes()
    # a fraction of the file, not a byte count: the file's length varies with its time stamps
    cut = (
        1
        + data.draw(st.integers(min_value=0, max_value=10**6), label="cut (ppm)") * (len(whole) - 2) // 10**6
    )
    path.write_bytes(whole[:cut])
    assert main(["batch", "--resume", str(run), "--quiet"]) == 3
    assert attempts_of(run) == want


# ------------------------------------------------------------------ the bookkeeping a kill can cut in two


def _flaky_run(tmp: Path, retries: int) -> tuple[Path, Path]:
    """A one-session run whose model fails at its second call, with ``retries`` retries."""
    proto = tmp / "p.toml"
    proto.write_text(f'name = "p"\nretries = {retries}\n')
    rc = main(
        [
            "batch",
            "--corpus",
            str(CORPUS),
            "--protocol",
            str(proto),
            "--models",
            flaky_script(tmp),
            "--toolchain",
            RECORDED,
            "--sessions-dir",
            str(tmp),
            "--run-id",
            "f",
            "--quiet",
        ]
    )
    assert rc == 3  # its one session ended by an infrastructure failure: nothing was evaluated
    run = tmp / "f"
    (path,) = [p for p in run.rglob("*.jsonl") if p.name != "infra.jsonl"]
    return run, path


def test_a_kill_between_logging_a_retry_and_rewinding_spends_no_second_retry(tmp_path: Path) -> None:
    from beavertui.batch.job import JobSpec, prepare
    from beavertui.batch.rundir import log_infra

    run, path = _flaky_run(tmp_path, retries=0)
    _h, events, _p = read_session(path)
    end = events[-1]
    assert isinstance(end, SessionEnd) and end.stop_reason == "error"
    rel = str(path.relative_to(run))
    # a process with one retry left logged the retry of this end, then was killed before the rewrite
    log_infra(run, {"session": rel, "detail": end.detail, "retried": True, "at": end.t})
    job = JobSpec(
        "f", read_manifest(run).models[0], "x", read_manifest(run).protocols[0].protocol, "vec_scale", 0, path
    )
    state = prepare(job, run, retries=1)
    assert isinstance(state, tuple), state  # the retry still happens
    assert [e.kind for e in state[1]][-1] != "end"
    assert sum(1 for r in read_infra(run) if r.get("retried")) == 1  # and is logged once
    assert [p.name for p in run.rglob(".*")] == [".run.lock"]  # no temporary file left, the lock kept


def test_the_final_failure_is_logged_even_when_the_run_was_killed_before_logging_it(tmp_path: Path) -> None:
    run, _path = _flaky_run(tmp_path, retries=0)
    (run / "infra.jsonl").unlink()  # killed after the session ended, before its failure was logged
    assert main(["batch", "--resume", str(run), "--quiet"]) == 3
    assert infra_counts(run) == (0, 1)
    assert main(["batch", "--resume", str(run), "--quiet"]) == 3
    assert infra_counts(run) == (0, 1)  # logged once, however often the run is resumed


def test_a_torn_infrastructure_log_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    from beavertui.batch.rundir import log_infra

    log_infra(tmp_path, {"session": "a", "detail": "one", "retried": False})
    with (tmp_path / "infra.jsonl").open("a") as fh:
        fh.write('{"t": 1, "session": "b", "det')  # a write cut by SIGKILL
    log_infra(tmp_path, {"session": "c", "detail": "two", "retried": False})
    assert [r["detail"] for r in read_infra(tmp_path)] == ["one", "two"]


def test_temporary_files_of_a_killed_run_are_never_read_as_sessions_and_are_removed(tmp_path: Path) -> None:
    run, path = _flaky_run(tmp_path, retries=0)
    before = path.read_bytes()
    left = [path.parent / ".rewind-abc.partial", run / ".run-xyz.partial"]
    for f in left:
        f.write_text('{"kind": "header", "cut')
    assert main(["batch", "--resume", str(run), "--quiet"]) == 3
    assert not any(f.exists() for f in left)
    assert path.read_bytes() == before


def test_a_finished_session_that_lost_only_its_last_newline_is_completed(tmp_path: Path) -> None:
    run, path = _flaky_run(tmp_path, retries=0)
    whole = path.read_bytes()
    path.write_bytes(whole[:-1])
    assert main(["batch", "--resume", str(run), "--quiet"]) == 3
    assert path.read_bytes() == whole
