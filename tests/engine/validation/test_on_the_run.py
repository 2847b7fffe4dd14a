"""The check a batch makes of a task never validated on its GPU (engine/validation/on_the_run.py), on the CPU
fixture ``sleepy`` (tests/data/cpu) under the local toolchain with a stand-in GPU signature: real builds and
runs of its reference, a verdict kept as corpus validate keeps one, each task checked once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from beavertui.engine.corpus import verdicts
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import GpuSignature, Verdict
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain
from beavertui.engine.validation.on_the_run import NOTE, UsableCheck

SIG = GpuSignature(slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0")
DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def sleepy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Task, LocalToolchain, Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    shutil.copytree(DATA / "cpu", tmp_path / "corpus")
    task = load_corpus(tmp_path / "corpus").get("sleepy")
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", keep_start_logs=False))
    tool.gpu = lambda: SIG  # type: ignore[method-assign]
    return task, tool, tmp_path / "corpus"


def _broken(category: str) -> Verdict:
    return Verdict(iteration=1, category=category, signature="x", correct=category == "passed")


def test_a_usable_task_is_checked_once_and_its_verdict_kept(
    sleepy: tuple[Task, LocalToolchain, Path],
) -> None:
    task, tool, _root = sleepy
    check = UsableCheck(tool)
    assert check(task, _broken("functional_correctness")) is None
    assert check(task, _broken("functional_correctness")) is None
    assert check.checked == [task.id]  # the reference ran once
    rec = verdicts.load(task, SIG.slug, tool.cache_root)
    assert rec is not None and rec.verdict == "usable" and NOTE in rec.notes
    assert rec.reference_run_s is not None and 0 < rec.reference_run_s < 10  # its real run, seconds
    # a later batch (another check object) finds the verdict and runs nothing
    again = UsableCheck(tool)
    assert again(task, _broken("functional_correctness")) is None and again.checked == []


def test_a_task_whose_reference_fails_is_unusable(sleepy: tuple[Task, LocalToolchain, Path]) -> None:
    task, tool, root = sleepy
    check_sh = root / "sleepy" / "testbench" / "check.sh"
    check_sh.write_text(check_sh.read_text().replace('= "42"', '= "43"'))  # no solution passes now
    task = load_corpus(root).get("sleepy")
    why = UsableCheck(tool)(task, _broken("functional_correctness"))
    assert why is not None and why.startswith("the reference fails here: functional_correctness")
    rec = verdicts.load(task, SIG.slug, tool.cache_root)
    assert rec is not None and rec.verdict == "unusable" and rec.reference_run_s is None


def test_a_broken_start_that_passes_unchanged_is_unusable(sleepy: tuple[Task, LocalToolchain, Path]) -> None:
    task, tool, _root = sleepy
    assert UsableCheck(tool)(task, _broken("passed")) == "the broken start passes unchanged"


def test_a_task_with_a_verdict_or_no_gpu_is_not_checked(sleepy: tuple[Task, LocalToolchain, Path]) -> None:
    task, tool, _root = sleepy
    rec = verdicts.VerdictRecord(
        task_id=task.id, gpu=SIG.slug, verdict="unusable", reason="as stored", label=task.label
    )
    verdicts.save(task, rec, tool.cache_root)
    check = UsableCheck(tool)
    # run anyway on purpose (--all-tasks): the stored verdict was applied when the batch chose its tasks
    assert check(task, _broken("passed")) is None and check.checked == []
    tool.gpu = lambda: None  # type: ignore[method-assign]
    assert UsableCheck(tool)(task, _broken("passed")) is None
