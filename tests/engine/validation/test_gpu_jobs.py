"""corpus validate --gpu-jobs: checks build side by side while at most N of their GPU stages run at once.

The stages are stand-ins (the build and test stage functions of the toolchain replaced), so that what is
checked is only the toolchain's own bookkeeping: with a limit of one, no two test stages overlap, while four
builds were in flight at once (a barrier of four that a serial schedule would never pass).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import StageResult, Verdict
from beavertui.engine.toolchain import local
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.placement import GpuSlots

ROOT = Path(__file__).resolve().parents[3]


def _attempts(monkeypatch: pytest.MonkeyPatch, slots: threading.Semaphore | None) -> int:
    """Four attempts at once; the most test stages seen in flight together."""
    task = load_corpus(ROOT / "corpus").tasks[0]
    builds = threading.Barrier(4, timeout=30)
    lock = threading.Lock()
    inside = [0, 0]  # now, most

    def build(work: object, cfg: object) -> StageResult:
        builds.wait()  # all four builds in flight together, whatever the GPU limit
        return StageResult(stage="build", command="b", rc=0, duration_s=0.0)

    def test(work: object, cfg: object) -> StageResult:
        with lock:
            inside[0] += 1
            inside[1] = max(inside[1], inside[0])
        time.sleep(0.2)
        with lock:
            inside[0] -= 1
        return StageResult(stage="run", command="t", rc=1, duration_s=0.2, log="FAILED: mismatch at 0\n")

    monkeypatch.setattr(local.stages, "build", build)
    monkeypatch.setattr(local.stages, "test", test)
    tool = local.LocalToolchain(placement=GpuSlots(slots))
    options = AttemptOptions(iteration=1, gate=0.0, time_if_correct=False, sanitize_on_failure=False)

    def one(_: int) -> Verdict:
        events = list(
            local.LocalToolchain(tool.config, tool.placement).attempt(task, task.broken_start(), options)
        )
        verdict = events[-1]
        assert isinstance(verdict, Verdict) and not verdict.correct
        return verdict

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(4)))
    return inside[1]


def test_at_most_gpu_jobs_test_stages_run_at_once_while_builds_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _attempts(monkeypatch, threading.BoundedSemaphore(1)) == 1
    assert _attempts(monkeypatch, threading.BoundedSemaphore(2)) <= 2


def test_gpu_jobs_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["corpus", "validate", "--gpu-jobs", "0", "--no-timing"]) == 2
    assert "--gpu-jobs must be 1 to 1,024, not 0" in capsys.readouterr().err
