"""The background builds of the test suite (tests/prebuild.py): each job runs once, and a job that did not
finish normally in the background runs again where its results are asked for."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.prebuild import GROUPS, THREAD, Background, Prebuild


def _group(
    tmp: pytest.TempPathFactory, jobs: dict[str, Callable[[], str]], redo: Callable[[str], bool]
) -> Prebuild[str, str]:
    g: Prebuild[str, str] = Prebuild(__file__, lambda _: jobs, "unused", redo=redo)
    GROUPS.pop(g.module)  # not a group of the session
    g._load(tmp)
    return g


def test_every_job_runs_once_and_a_failed_or_redone_one_again_in_the_fixture(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    names = ("ok", "raises", "redo", "late", "never")
    calls: dict[str, list[str]] = {n: [] for n in names}

    def job(name: str) -> Callable[[], str]:
        def run() -> str:
            where = threading.current_thread().name
            calls[name].append(where)
            if name == "late":  # holds the background thread until the results are asked for
                for _ in range(1000):
                    if g._closed:
                        break
                    threading.Event().wait(0.01)
            if where == THREAD and name == "raises":
                raise TimeoutError("cut in the background")
            return f"{name} {'early' if where == THREAD else 'asked'}"

        return run

    g = _group(
        tmp_path_factory,
        {n: job(n) for n in names},
        redo=lambda r: r == "redo early",
    )
    background = Background([g])
    while not calls["late"]:
        threading.Event().wait(0.01)
    got = g.results(tmp_path_factory)
    background.stop()
    assert list(got) == list(names)
    assert got["ok"] == "ok early" and got["late"] == "late early"
    assert got["raises"] == "raises asked" and got["redo"] == "redo asked"  # run again where asked
    assert [len(calls[n]) for n in names] == [1, 2, 2, 1, 1]
    assert got["never"] == "never asked"  # left by the background thread once the results were asked for


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_builds_find_nvcc_and_bypass_patches_while_another_test_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background builds run while other tests monkeypatch PATH (to hide ncu, say) or the engine's
    run_stage (to record their own batch's stages): they start their processes with the session's
    environment, so nvcc is still found (a build failing with "nvcc: command not found" meant os.environ was
    read in the middle of such a test), and through the run_stage of the session's start, so they never show
    up in another test's record."""
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.stage import stages
    from tests.engine.corpus import test_corpus_ci
    from tests.engine.timing import test_timing_drivers_build

    def recorded(*a: object, **kw: object) -> None:
        raise AssertionError("a background build went through another test's run_stage")

    monkeypatch.setenv("PATH", str(tmp_path))  # what test_profile.py does while the builds run
    monkeypatch.setattr(stages, "run_stage", recorded)  # what test_batch_schedule.py does
    task = test_corpus_ci.TASK_IDS[0]
    res = test_corpus_ci.execute(test_corpus_ci.Job("v", task, ("nvcc", "--version"), b"", None))
    assert res.rc == 0 and "Cuda compilation tools" in res.log, res.log
    t = load_corpus(test_timing_drivers_build.ROOT / "corpus").tasks[0]
    work = test_timing_drivers_build._prepare(t, t.reference() or "", tmp_path)
    run = test_timing_drivers_build.stage(work, "nvcc --version", tmp_path)
    assert run.rc == 0 and "Cuda compilation tools" in run.log, run.log


class _Item:
    """What run_last reads of a collected test: its file and whether it is marked slow."""

    def __init__(self, path: Path, slow: bool = False) -> None:
        self.path, self.slow = path, slow

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "slow" and self.slow else None


def test_a_parallel_run_orders_modules_builds_first_then_slow_ones_and_a_serial_run_builds_last(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests import prebuild

    here = Path(__file__).resolve()
    g = _group(tmp_path_factory, {}, redo=lambda _: False)
    monkeypatch.setitem(GROUPS, here, g)
    a, b, c = (here.with_name(n) for n in ("a.py", "b.py", "c.py"))
    items = [_Item(a), _Item(here), _Item(b), _Item(b, slow=True), _Item(c), _Item(here)]

    def order(parallel: bool) -> list[tuple[Path, bool]]:
        monkeypatch.setattr(prebuild, "in_parallel", lambda: parallel)
        got = list(items)
        prebuild.run_last(got)  # type: ignore[arg-type]
        assert sorted(map(id, got)) == sorted(map(id, items))  # every test kept, once
        return [(i.path, i.slow) for i in got]

    assert order(True) == [(here, False), (here, False), (b, False), (b, True), (a, False), (c, False)]
    assert order(False) == [(a, False), (b, False), (b, True), (c, False), (here, False), (here, False)]
