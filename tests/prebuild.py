"""Builds a test module needs, started when the test session starts and run while the other tests run.

In a serial run (``-n 0``) most of the suite runs on one core; the nvcc builds of test_corpus_ci.py and test_timing_drivers_build.py
(minutes of CPU time) are independent of everything else and only read by those modules. A module declares
its jobs with ``Prebuild(__file__, make_jobs)``. Its tests run at the end of the session (``run_last``),
and when the selected tests include one of them, one background thread at the lowest CPU priority (nice 19,
for that thread and the processes it starts, so it takes the idle core and yields to the tests running
meanwhile) works through the jobs from the start of the session, where a selected test uses the fixture
named in the declaration. The module's fixture calls ``results``:
the background thread takes no new job (of any module) while the fixture runs the jobs nobody took, two at
a time at normal priority; each job runs once. A job the background thread did not finish normally (it
raised, a time limit hit while the machine was loaded, say, or ``redo`` says so of its result) runs again in
the fixture, so what a test sees never depends on when or where its job ran.

Jobs run in a thread while other tests change ``os.environ`` (``monkeypatch.setenv("PATH", ...)``), and a
process started meanwhile inherits what the environment is at that moment: a job starts its processes with
``ENV``, the environment as it was when the test session began, never with ``os.environ``. For the same
reason a job calls the engine functions it needs as they were bound when its module was imported: tests
replace some of them (``monkeypatch.setattr(stages, "run_stage", ...)``) to record their own stages. And a
test that watches every process started (test_hostile_inputs.py's audit hook) leaves out the thread ``THREAD``.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import threading
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import pytest

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

#: The environment when the session began (this module is imported by conftest.py before any test runs):
#: jobs pass it to the processes they start, since tests running meanwhile may change os.environ.
ENV: Mapping[str, str] = MappingProxyType(dict(os.environ))
#: The background thread's name: a test that watches every process the interpreter starts (an audit hook)
#: leaves out those this thread starts for the builds.
THREAD = "prebuild"
#: Every declared group, by the resolved path of its test module.
GROUPS: dict[Path, Prebuild[Any, Any]] = {}
#: Workers of normal priority that run what is left when a fixture asks (two cores on the CI machine).
WORKERS = 2
#: Set while no fixture runs jobs of its own: the background thread starts no job while one does, so that
#: it never takes the cores from the builds a test is waiting for.
IDLE = threading.Event()
IDLE.set()


class Prebuild(Generic[K, R]):
    def __init__(
        self,
        module_file: str,
        make_jobs: Callable[[pytest.TempPathFactory], Mapping[K, Callable[[], R]]],
        fixture: str,
        enabled: bool = True,
        redo: Callable[[R], bool] = lambda _: False,
    ) -> None:
        self.module = Path(module_file).resolve()
        self.make_jobs = make_jobs
        self.fixture = fixture
        """The module's fixture that calls ``results``: nothing starts unless a selected test uses it."""
        self.enabled = enabled
        self.redo = redo
        self._cond = threading.Condition()
        self._jobs: dict[K, Callable[[], R]] | None = None
        self._todo: list[K] = []
        self._running = False
        self._early: dict[K, tuple[bool, Any]] = {}
        """Jobs the background thread ran: (finished normally, result or exception)."""
        self._closed = False
        GROUPS[self.module] = self

    def _load(self, tmp: pytest.TempPathFactory) -> dict[K, Callable[[], R]]:
        with self._cond:
            if self._jobs is None:
                self._jobs = dict(self.make_jobs(tmp))
                self._todo = list(self._jobs)
            return self._jobs

    def run_early(self) -> None:
        """Run jobs in the calling (background) thread until none is left or the fixture has asked."""
        jobs = self._jobs
        assert jobs is not None
        while True:
            IDLE.wait()
            with self._cond:
                if self._closed or not self._todo:
                    return
                key = self._todo.pop(0)
                self._running = True
            try:
                try:
                    result = jobs[key]()
                except BaseException as exc:
                    self._early[key] = (False, exc)
                else:
                    self._early[key] = (not self.redo(result), result)
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()

    def close(self) -> None:
        """Take no new job in the background and wait for the one running."""
        with self._cond:
            self._closed = True
            self._cond.wait_for(lambda: not self._running)

    def results(self, tmp: pytest.TempPathFactory) -> dict[K, R]:
        """Every job's result, in the order of make_jobs; what is not done yet runs here."""
        jobs = self._load(tmp)
        with self._cond:
            self._closed = True
            left = list(self._todo)
            self._todo.clear()
        IDLE.clear()
        try:
            with cf.ThreadPoolExecutor(max_workers=WORKERS) as pool:
                futures = {k: pool.submit(jobs[k]) for k in left}
                self.close()
                again = [k for k, (ok, _) in self._early.items() if not ok]
                futures.update({k: pool.submit(jobs[k]) for k in again})
                done = {k: r for k, (ok, r) in self._early.items() if ok}
                done.update({k: f.result() for k, f in futures.items()})
        finally:
            IDLE.set()
        return {k: done[k] for k in jobs}


class Background:
    """One thread at the lowest priority that works through the groups in the order their modules run."""

    def __init__(self, groups: list[Prebuild[Any, Any]]) -> None:
        self.groups = groups
        self._thread = threading.Thread(target=self._work, name=THREAD, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        if sys.platform == "linux":  # per thread on Linux, and inherited by the processes it starts
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        for g in self.groups:
            g.run_early()

    def stop(self) -> None:
        for g in self.groups:
            g.close()
        self._thread.join()


def in_parallel() -> bool:
    """Whether this process is a worker of a parallel run (pytest-xdist, ``-n``)."""
    return "PYTEST_XDIST_WORKER" in os.environ


def run_last(items: list[pytest.Item]) -> None:
    """Move the tests of the modules that declare builds to the end of the session (in their order), so
    that their builds have the rest of the session to run in the background.

    In a parallel run they move to the start instead: every worker collects every test, so no worker can
    tell which builds it will need and none builds in the background; the worker that is given such a
    module (each module goes whole to one worker, ``--dist loadfile``) builds first, at normal priority,
    while the other workers run the rest of the suite. After them come the modules that hold a test marked
    ``slow``, then the rest in their order: the workers take modules in this order (``--no-loadscope-reorder``
    in pyproject.toml keeps it), so the longest ones start early and the run ends on short modules, not with
    one worker still on a long module while the others wait."""
    group = [i for i in items if Path(i.path).resolve() in GROUPS]
    rest = [i for i in items if Path(i.path).resolve() not in GROUPS]
    if not in_parallel():
        items[:] = rest + group
        return
    slow = {Path(i.path) for i in rest if i.get_closest_marker("slow") is not None}
    items[:] = (
        group + [i for i in rest if Path(i.path) in slow] + [i for i in rest if Path(i.path) not in slow]
    )


def start_selected(items: list[pytest.Item], tmp: pytest.TempPathFactory) -> Background | None:
    """Start the background thread for the groups with a selected test that uses their fixture, if any
    (never in a parallel run, see ``run_last``)."""
    if in_parallel():
        return None
    order: dict[Path, int] = {}
    for i, item in enumerate(items):
        g = GROUPS.get(Path(item.path).resolve())
        if g is not None and g.fixture in getattr(item, "fixturenames", ()):
            order.setdefault(g.module, i)
    groups = sorted((GROUPS[p] for p in order if GROUPS[p].enabled), key=lambda g: order[g.module])
    loaded = []
    for g in groups:
        try:
            g._load(tmp)
        except Exception:  # the module's own fixture meets the same error, in its own test
            continue
        loaded.append(g)
    return Background(loaded) if loaded else None
