"""Every family's in-process timing builds with nvcc (no GPU needed; nothing here runs a kernel).

For one task of each family of the bundled corpus, in a real work dir with the timing sources (corpus/_timing)
placed as the engine places them: the reference built as a side library
with the task's own ``timing_driver.library_command`` (it must export ``beaver_test_main`` and nothing of the
CUDA runtime, so that two libraries loaded side by side cannot bind to each other's runtime), and the task's
timing driver built with ``driver_command`` (it must link: every family's driver code compiles for sm_90).
The builds start with the test session, one at a time at low priority while the tests before this module run;
what is left runs two at a time when the first test here needs it (tests/prebuild.py).
``BEAVER_TIMING_BUILD_ALL=1`` builds every task instead of one per family.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import StageResult
from beavertui.engine.stage import stages
from beavertui.engine.timing import native
from tests.prebuild import ENV, Prebuild

ROOT = Path(__file__).resolve().parents[3]
NVCC = shutil.which("nvcc")


def _tasks() -> list[Task]:
    tasks = sorted(load_corpus(ROOT / "corpus").tasks, key=lambda t: t.id)
    if os.environ.get("BEAVER_TIMING_BUILD_ALL") == "1":
        return tasks
    seen: dict[str, Task] = {}
    for t in tasks:
        seen.setdefault(t.family, t)
    return list(seen.values())


TASKS = _tasks()


#: Bound when this module is imported, before any test runs: the builds run in the background while other
#: tests replace stages.run_stage with a wrapper that records the stages of their own batch.
_prepare, _run_stage, _place_sources = stages.prepare, stages.run_stage, native.place_sources


def stage(work: stages.WorkDir, command: str, base: Path) -> StageResult:
    """One build of this module: the engine's build stage, with the session's environment (not os.environ as
    it is while the builds run in the background: another test may have PATH monkeypatched then)."""
    return _run_stage(work, "build", command, 600, stages.StageConfig(sm=90, base_dir=base, env=ENV))


def _build(task: Task, base: Path) -> dict[str, object]:
    d = task.timing_driver
    assert d is not None, f"{task.id}: no timing_driver in input.json"
    work = _prepare(task, task.reference() or "", base)
    _place_sources(d, work)  # the timing sources (corpus/_timing), as the engine places them
    out: dict[str, object] = {"work": work.path}
    for what, command in (("library", d.library_command), ("driver", d.driver_command)):
        out[what] = stage(work, command, base)
    nm = shutil.which("nm")
    if nm and (work.path / d.library).is_file():
        proc = subprocess.run(
            [nm, "-D", "--defined-only", str(work.path / d.library)], capture_output=True, text=True
        )
        out["exports"] = [ln.split()[-1] for ln in proc.stdout.splitlines() if ln.strip()]
    return out


def _jobs(tmp: pytest.TempPathFactory) -> dict[str, Callable[[], dict[str, object]]]:
    base = tmp.mktemp("timing-builds")
    return {t.id: partial(_build, t, base) for t in TASKS}


def _timed_out(b: dict[str, object]) -> bool:
    """A build cut by its time limit (in the background, on a loaded machine) is built again."""
    return any(getattr(b.get(what), "timed_out", False) for what in ("library", "driver"))


#: The builds start with the test session, in the background (tests/prebuild.py).
PREBUILD = Prebuild(__file__, _jobs, "built", enabled=NVCC is not None, redo=_timed_out)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    return PREBUILD.results(tmp_path_factory)


def test_every_bundled_task_has_a_timing_driver_built_from_a_timing_file_of_the_corpus() -> None:
    tasks = load_corpus(ROOT / "corpus").tasks
    assert all(t.timing_driver is not None and not t.timing_driver.unavailable for t in tasks)
    used: set[str] = set()
    for t in tasks:
        d = t.timing_driver
        assert d is not None
        lib = re.findall(r"_timing/(\w+\.cu)\b", d.library_command)
        drv = re.findall(r"_timing/(\w+\.cu)\b", d.driver_command)
        assert len(lib) == 1 and lib == drv, (t.id, d.library_command, d.driver_command)
        used.add(lib[0])
    files = {p.name for p in (ROOT / "corpus" / "_timing").glob("*.cu")}
    assert used == files  # every task's file exists, and no family file is left unused


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.slow
@pytest.mark.parametrize("task_id", [t.id for t in TASKS])
def test_the_side_library_and_the_driver_build(task_id: str, built: dict[str, dict[str, object]]) -> None:
    b = built[task_id]
    for what in ("library", "driver"):
        res = b[what]
        assert res.rc == 0, f"{task_id} {what}: {res.command}\n{res.log[-3000:]}"  # type: ignore[attr-defined]
    task = next(t for t in TASKS if t.id == task_id)
    d = task.timing_driver
    assert d is not None
    work = b["work"]
    assert (work / d.library).is_file() and (work / d.driver).is_file()  # type: ignore[operator]
    if "exports" in b:
        exports = b["exports"]
        assert "beaver_test_main" in exports  # type: ignore[operator]
        assert not [e for e in exports if e.startswith(("cuda", "__cuda"))], exports  # type: ignore[union-attr]
