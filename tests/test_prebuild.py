"""The background builds of the test suite (tests/prebuild.py): each job runs once, and a job that did not
finish normally in the background runs again where its results are asked for."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from tests.prebuild import GROUPS, Background, Prebuild


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
            if where == "prebuild" and name == "raises":
                raise TimeoutError("cut in the background")
            return f"{name} {'early' if where == 'prebuild' else 'asked'}"

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
