"""A correctness run's time limit follows from the task's reference run on this GPU (engine/corpus/run_limit.py).

Real runs on the CPU fixture ``sleepy`` (tests/data/cpu, its own limit 10 s) under the local toolchain with a
stand-in GPU signature, and the release's instances under the package's known sets of the H200 and H100.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from beavertui.batch.protocol_file import protocol_slug
from beavertui.engine.corpus import run_limit as rl
from beavertui.engine.corpus import verdicts
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task, Timeouts
from beavertui.engine.loop.run import run_session
from beavertui.engine.models.scripted import ScriptedModel
from beavertui.engine.session.events import GpuSignature, Ran, SessionEnd
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.timing.baselines import share_key
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

DATA = Path(__file__).resolve().parents[2] / "data"
SIG = GpuSignature(slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0")
H200 = "nvidia_h200_sm_90_cuda_13_0"
H100 = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"


@pytest.fixture
def sleepy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Task, LocalToolchain, Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shutil.copytree(DATA / "cpu", tmp_path / "corpus")
    task = load_corpus(tmp_path / "corpus").get("sleepy")
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", keep_start_logs=False))
    tool.gpu = lambda: SIG  # type: ignore[method-assign]
    return task, tool, tool.cache_root


def _record(task: Task, cache: Path, run_s: float | None) -> None:
    rec = verdicts.VerdictRecord(
        task_id=task.id, gpu=SIG.slug, verdict="usable", reason="fails as labelled", label=task.label,
        reference_run_s=run_s,
    )  # fmt: skip
    verdicts.save(task, rec, cache)


def test_the_limit_is_a_factor_of_the_reference_run_with_a_floor_and_a_ceiling(
    sleepy: tuple[Task, LocalToolchain, Path],
) -> None:
    task, _tool, cache = sleepy
    assert task.timeouts.run_s == 10.0
    none = rl.run_limit(task, SIG.slug, "reference", cache)
    assert none.seconds == 10.0 and "no reference run time known on test_gpu" in none.source
    _record(task, cache, 0.05)
    floor = rl.run_limit(task, SIG.slug, "reference", cache)
    assert floor.seconds == 10.0  # the floor of 20 s, capped by the task's own 10 s
    assert rl.run_limit(task, SIG.slug, "flat", cache).seconds == 10.0
    big = replace(task, timeouts=Timeouts(build_s=10.0, run_s=300.0))  # the release's own limit
    _record(big, cache, 4.0)
    assert rl.run_limit(big, SIG.slug, "reference", cache).seconds == 40.0  # 10 x 4.0 s
    _record(big, cache, 0.3)
    assert rl.run_limit(big, SIG.slug, "reference", cache).seconds == 20.0  # the floor
    _record(big, cache, 45.0)
    assert rl.run_limit(big, SIG.slug, "reference", cache).seconds == 300.0  # never above the task's own
    assert rl.run_limit(big, SIG.slug, "flat", cache).seconds == 300.0
    # a session's limit changes no reference timing: tasks share their baselines as before
    assert share_key(rl.with_run_limit(big, rl.Limit(20.0, "x"))) == share_key(big)


def test_the_release_on_the_h200_takes_its_limits_from_the_known_set(tmp_path: Path) -> None:
    with tarfile.open(DATA / "release_fresh" / "release_fresh.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    tasks = {t.id: t for t in load_corpus(tmp_path).tasks}
    quick = rl.run_limit(tasks["cuda_59__logic_error__501f0dd2"], H200, "reference", tmp_path / "cache")
    assert quick.seconds == 20.0 and "0.28 s on nvidia_h200" in quick.source and "known verdicts" in quick.source
    # cuda_117's reference fails there: no run time, the release's own 300 s
    failing = rl.run_limit(tasks["cuda_117__memory_crash__c2f7ebb0"], H200, "reference", tmp_path / "cache")
    assert failing.seconds == 300.0 and "no reference run time" in failing.source
    flat = rl.run_limit(tasks["cuda_59__logic_error__501f0dd2"], H200, "flat", tmp_path / "cache")
    assert flat.seconds == 300.0 and "run_limit flat" in flat.source


def test_the_release_on_the_h100_takes_its_limits_from_its_partial_known_set(tmp_path: Path) -> None:
    """The H100 set (one release batch's own checks there) has cuda_127, whose reference ran 2.10 s on the
    H100 (0.48 s on the H200), and not cuda_59: that one keeps the release's own 300 s until a batch checks it."""
    with tarfile.open(DATA / "release_fresh" / "release_fresh.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    tasks = {t.id: t for t in load_corpus(tmp_path).tasks}
    slow = rl.run_limit(tasks["cuda_127__compile_error__a7b4a675"], H100, "reference", tmp_path / "cache")
    assert slow.seconds == pytest.approx(21.022) and "2.10 s on nvidia_h100" in slow.source
    assert "known verdicts" in slow.source
    assert rl.run_limit(tasks["cuda_127__compile_error__a7b4a675"], H200, "reference", tmp_path / "cache").seconds == 20.0
    lacking = rl.run_limit(tasks["cuda_59__logic_error__501f0dd2"], H100, "reference", tmp_path / "cache")
    assert lacking.seconds == 300.0 and "no reference run time known on nvidia_h100" in lacking.source


def test_a_hung_candidate_costs_the_reference_limit_not_the_tasks(
    sleepy: tuple[Task, LocalToolchain, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate that never ends, killed at the limit from its reference (here a floor of 0.5 s, so that
    the test takes no 20 s), not at the task's own 10 s; each run event says which limit and why."""
    task, tool, cache = sleepy
    _record(task, cache, 0.01)
    monkeypatch.setattr(rl, "FLOOR_S", 0.5)
    hang = "```cuda\ncompute() { sleep 600; }\ncost() { echo 1.0; }\n```"
    events = list(run_session(task, ScriptedModel([hang]), tool, Protocol(budget=1)))
    runs = [e for e in events if isinstance(e, Ran)]
    assert runs and runs[-1].result.timed_out
    assert runs[-1].result.limit_s == 0.5 and runs[-1].result.duration_s < 5.0  # type: ignore[operator]
    assert "the reference's run of 0.01 s on test_gpu" in (runs[-1].result.limit_from or "")
    end = events[-1]
    assert isinstance(end, SessionEnd) and not end.success


def test_the_flat_limit_stays_available_for_exact_reproduction(
    sleepy: tuple[Task, LocalToolchain, Path],
) -> None:
    task, tool, cache = sleepy
    _record(task, cache, 0.01)
    reply = f"```cuda\n{task.reference()}\n```"
    events = list(run_session(task, ScriptedModel([reply]), tool, Protocol(budget=1, run_limit="flat")))
    (run,) = [e for e in events if isinstance(e, Ran)]
    assert run.result.rc == 0 and run.result.limit_s == 10.0
    assert run.result.limit_from == "the task's own limit (10 s; protocol run_limit flat)"
    # the setting names its own runs' folders only away from its default: runs made before keep theirs
    assert protocol_slug(Protocol()) != protocol_slug(Protocol(run_limit="flat"))
    release = Protocol(budget=2, feedback="L3", history=2, temperature=0.0, gate=0.7)
    before = hashlib.sha256(release.model_dump_json(exclude={"run_limit"}).encode()).hexdigest()[:8]
    assert protocol_slug(release) == f"iterative-K2-L3-H2-T0-p0.7-{before}"


def test_on_a_gpu_never_checked_the_reference_runs_before_the_broken_start_and_limits_it(
    sleepy: tuple[Task, LocalToolchain, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's first session of a task with no verdict on its GPU: the check runs the reference first,
    and the broken start's check (here a broken start that never ends) is cut at the limit from that run,
    not at the task's own limit (seen on an H100 with no known verdicts: a hung broken start held the GPU,
    and every timing waiting for it, until the release's 300 s)."""
    from beavertui.engine.validation.on_the_run import UsableCheck

    task, tool, cache = sleepy
    task.broken_start_path.write_text("compute() { sleep 600; }\ncost() { echo 1.0; }\n")
    task = replace(task, error_log_path=None)  # no recorded log: the session checks its broken start
    assert task.error_log() is None
    assert verdicts.load(task, SIG.slug, cache) is None and task.timeouts.run_s == 10.0
    monkeypatch.setattr(rl, "FLOOR_S", 0.5)  # the floor alone decides (the reference's run varies with load)
    monkeypatch.setattr(rl, "FACTOR", 0.01)
    order: list[str] = []
    real = tool.attempt

    def attempt(t: Task, code: str, options: object) -> object:
        order.append("reference" if code == t.reference() else "broken start" if code == t.broken_start() else "other")
        for e in real(t, code, options):  # type: ignore[arg-type]
            if isinstance(e, Ran):
                order.append(f"ran {e.result.limit_s:g} s, timed out {e.result.timed_out}")
            yield e

    tool.attempt = attempt  # type: ignore[method-assign, assignment]
    check = UsableCheck(tool)
    reply = f"```cuda\n{task.reference()}\n```"
    events = list(run_session(task, ScriptedModel([reply]), tool, Protocol(budget=1), usable=check))
    assert order[:4] == ["reference", "ran 10 s, timed out False", "broken start", "ran 0.5 s, timed out True"]
    assert check.checked == [task.id]  # the reference ran once, for the limit and for the verdict
    (run,) = [e for e in events if isinstance(e, Ran)]  # the attempt: the reference, under the same limit
    assert run.result.limit_s == 0.5 and "measured by this batch's check" in (run.result.limit_from or "")
    rec = verdicts.load(task, SIG.slug, cache)
    # its label says a wrong result; the check saw the broken start time out, and says so
    assert rec is not None and rec.verdict == "usable_relabelled" and rec.observed_category == "timeout"
    assert rec.reference_run_s is not None and rec.reference_run_s < 5.0
