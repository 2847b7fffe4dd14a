"""The degeneration interval on the recorded H200 runs: the reference resubmitted against itself is never
called slower than the reference, the same timings with the candidate 10% slower are (speedup_ci.py)."""

from __future__ import annotations

import math
import tarfile
from pathlib import Path

import numpy as np
import pytest

from beavertui.engine.metrics.attempts import iter_session_states, session_files
from beavertui.engine.metrics.speedup_ci import NOISE_FLOOR_LOG_SD, speedup_interval
from beavertui.engine.session.events import TimingResult

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = ("h200_batch_run_40", "release_batch", "release_batch_final", "release_kb_batch_final")


@pytest.fixture(scope="module")
def repairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, TimingResult]]]:
    """Per recorded run: (task, timing) of each trajectory's first correct attempt at iteration >= 2 with a
    timing: every one is the task's reference resubmitted (``scripted:@alternate``)."""
    out: dict[str, list[tuple[str, TimingResult]]] = {}
    for name in RUNS:
        root = tmp_path_factory.mktemp(name)
        with tarfile.open(DATA / f"{name}.tar.gz") as tar:
            tar.extractall(root, filter="data")
        got: list[tuple[str, TimingResult]] = []
        for _, state in iter_session_states(session_files(root / "run")):
            first = next((a for a in state.attempts if a.verdict is not None and a.verdict.correct), None)
            if first is None or first.iteration < 2 or first.timing is None:
                continue
            got.append((state.header.task.id, first.timing.result))
        out[name] = got
    return out


def _hi(t: TimingResult, slower: float = 1.0) -> float:
    ci = speedup_interval(
        t.reference_samples, [x * slower for x in t.candidate_samples], method=t.method, runs=t.runs
    )
    assert ci is not None
    return ci[1]


@pytest.mark.parametrize("name", RUNS)
def test_no_reference_resubmission_is_called_degenerate(
    repairs: dict[str, list[tuple[str, TimingResult]]], name: str
) -> None:
    got = repairs[name]
    assert got, f"{name}: no repair at iteration >= 2"
    called = [(task, round(t.speedup, 4)) for task, t in got if _hi(t) < 1.0]
    print(f"{name}: {len(called)} of {len(got)} reference resubmissions called degenerate")
    assert called == []
    if name == "h200_batch_run_40":
        assert len(got) == 31
        # the launches bootstrapped as if independent (the earlier rule) called 8 of them degenerate
        boot = [
            t
            for _, t in got
            if (speedup_interval(t.reference_samples, t.candidate_samples, floor=0) or (0, 0))[1] < 1
        ]
        assert len(boot) == 8


@pytest.mark.parametrize("name", RUNS)
def test_a_repair_ten_percent_slower_with_the_same_noise_still_is(
    repairs: dict[str, list[tuple[str, TimingResult]]], name: str
) -> None:
    """Every recorded timing with its candidate samples 10% slower is degenerate, except where the timing
    itself cannot tell 10% apart: a testbench's own speed lines, 3 a side, spread over +/-30% and more."""
    for task, t in repairs[name]:
        within = speedup_interval(
            t.reference_samples, t.candidate_samples, method=t.method, runs=t.runs, floor=0
        )
        assert within is not None
        if math.log(within[1] / within[0]) / 2 > 0.09:
            assert t.method == "testbench_lines", task
            continue
        assert _hi(t, 1.1) < 1.0, task


def test_the_noise_floor_is_the_reference_against_itself_on_the_h200(
    repairs: dict[str, list[tuple[str, TimingResult]]], tmp_path: Path
) -> None:
    """NOISE_FLOOR_LOG_SD is the sd of ln(speedup) of the 80 timings of the reference against itself in
    h200_batch_run_40 (iterations 2 and 4 of every task, both the reference)."""
    root = tmp_path / "run40"
    with tarfile.open(DATA / "h200_batch_run_40.tar.gz") as tar:
        tar.extractall(root, filter="data")
    logs = [
        math.log(a.timing.result.speedup)
        for _, state in iter_session_states(session_files(root / "run"))
        for a in state.attempts
        if a.iteration in (2, 4) and a.timing is not None and a.verdict is not None and a.verdict.correct
    ]
    assert len(logs) == 80
    assert float(np.std(logs, ddof=1)) == pytest.approx(NOISE_FLOOR_LOG_SD, abs=5e-5)


@pytest.mark.parametrize("name", ("h200_batch_run_40", "release_batch_final", "release_kb_batch_final"))
def test_metrics_report_the_raw_rules_noise_floor_from_the_runs_own_intervals(
    repairs: dict[str, list[tuple[str, TimingResult]]], name: str, tmp_path: Path
) -> None:
    """Every repair of these runs is the reference resubmitted, so their raw rate (58.1%, 35.6%, 53.2%) is
    the raw rule's noise floor measured. `metrics` now puts the floor it derives from each run's own
    intervals beside it: half the judged first successes whose interval holds 1.0, as the timings' samples
    give them here. The measured rates lie within sampling error of it (a binomial 99% range)."""
    from beavertui.service.metrics import compute

    with tarfile.open(DATA / f"{name}.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    (g,) = compute(tmp_path / "run").groups
    within = []
    for _, t in repairs[name]:
        ci = speedup_interval(t.reference_samples, t.candidate_samples, method=t.method, runs=t.runs)
        assert ci is not None
        within.append(ci[0] <= 1.0 <= ci[1])
    assert g.n_degenerate_judged == len(within) and g.n_degenerate_fallback == 0
    assert g.degenerate_raw_noise_floor == pytest.approx(0.5 * sum(within) / len(within))
    assert g.degenerate_raw_noise_floor is not None and g.degenerate_rate_raw is not None
    n, floor = len(within), g.degenerate_raw_noise_floor
    print(
        f"{name}: raw {g.degenerate_rate_raw:.3f}, noise floor {floor:.3f}, {sum(within)} of {n} within noise"
    )
    assert abs(g.degenerate_rate_raw - floor) <= 2.576 * math.sqrt(floor * (1 - floor) / n)
