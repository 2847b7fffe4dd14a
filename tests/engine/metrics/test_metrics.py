"""Metrics of docs/metrics.md on small tables whose answers are computed by hand."""

from __future__ import annotations

import math
from itertools import combinations, pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beavertui.engine.metrics.compute import apply_source_models, compute_groups, pass_at_k_estimator
from beavertui.engine.metrics.swing import kendall, swing
from beavertui.engine.metrics.table import from_rows


def proto(**kw: Any) -> dict[str, Any]:
    base = {
        "method": "iterative",
        "feedback": "L3",
        "history": 2,
        "temperature": 0.0,
        "gate": 0.7,
        "budget": 3,
    }
    return {**base, **kw}


def row(task: str, it: int, correct: bool, speedup: float | None = None, **kw: Any) -> dict[str, Any]:
    out = {
        "run_id": "r",
        "model": "m",
        "task_id": task,
        "protocol": proto(),
        "sample": 0,
        "iteration": it,
        "category": "passed" if correct else "functional_correctness",
        "correct": correct,
        "speedup": speedup,
        "stop_reason": None,
        "self_source": False,
    }
    out.update(kw)
    return out


def iterative_rows() -> list[dict[str, Any]]:
    return [
        # A: fails, then correct but below the gate (0.5x: a degenerate repair), then 0.9x passes
        row("A", 1, False),
        row("A", 2, True, 0.5),
        row("A", 3, True, 0.9, stop_reason="passed"),
        # B: passes at once
        row("B", 1, True, 1.2, stop_reason="passed"),
        # C: stuck on the same code
        row("C", 1, False),
        row("C", 2, False, stop_reason="duplicate_code"),
        # D: self-sourced, so only 2 of the 3 iterations count; its late success is not counted
        row("D", 1, False, self_source=True),
        row("D", 2, False, self_source=True),
        row("D", 3, True, 2.0, self_source=True, stop_reason="passed"),
    ]


def test_iterative_group_by_hand() -> None:
    (g,) = compute_groups(from_rows(iterative_rows()))
    assert g.n_tasks == 4
    assert g.k == 3
    assert g.pass_at_1 == pytest.approx(0.25)
    assert g.pass_at_k == pytest.approx(0.5)
    assert g.debug_rate == pytest.approx(1 / 3)  # A, C, D fail first; only A recovers
    assert g.stagnation_rate == pytest.approx(0.5)  # C and D fail; C stagnated
    assert g.dominant_stagnation == "duplicate_code"
    assert g.dominant_stagnation_share == pytest.approx(1.0)
    assert g.degenerate_rate == pytest.approx(1.0)  # A first succeeds at 0.5x
    assert g.p_sweep == pytest.approx(
        {0.0: 0.5, 0.1: 0.5, 0.3: 0.5, 0.5: 0.5, 0.7: 0.5, 1.0: 0.25, 1.5: 0.0, 2.0: 0.0, 3.0: 0.0}
    )
    doc = g.as_json()
    assert list(doc["p_sweep"]) == ["0.0", "0.1", "0.3", "0.5", "0.7", "1.0", "1.5", "2.0", "3.0"]
    assert doc["pass@k"] == pytest.approx(0.5)


def test_samples_are_averaged_within_a_task_first() -> None:
    rows = [
        row("A", 1, True, 1.0, sample=0),
        row("A", 1, False, sample=1),
        row("A", 1, False, sample=2),
        row("A", 1, False, sample=3),
        row("B", 1, True, 1.0),
    ]
    (g,) = compute_groups(from_rows(rows))
    assert g.pass_at_k == pytest.approx((0.25 + 1.0) / 2)


def test_debug_rate_null_when_every_trajectory_passes_first() -> None:
    (g,) = compute_groups(from_rows([row("A", 1, True, 1.0), row("B", 1, True, 3.0)]))
    assert g.debug_rate is None
    assert g.stagnation_rate is None
    assert g.dominant_stagnation is None
    assert g.degenerate_rate is None


def test_degenerate_leaves_out_null_speedups() -> None:
    rows = [row("A", 1, False), row("A", 2, True, None), row("B", 1, False), row("B", 2, True, 1.5)]
    (g,) = compute_groups(from_rows([{**r, "protocol": proto(gate=0.0)} for r in rows]))
    assert g.degenerate_rate == pytest.approx(0.0)  # A left out; B not degenerate


def test_dominant_stagnation_ties_follow_the_detector_order() -> None:
    rows = [
        row("A", 1, False, stop_reason="no_progress"),
        row("B", 1, False, stop_reason="code_cycle"),
        row("C", 1, False, stop_reason="budget"),
    ]
    (g,) = compute_groups(from_rows(rows))
    assert g.stagnation_rate == pytest.approx(2 / 3)
    assert g.dominant_stagnation == "code_cycle"
    assert g.dominant_stagnation_share == pytest.approx(0.5)


def test_repeated_uses_the_unbiased_estimator() -> None:
    rep = proto(method="repeated", budget=2)
    rows = [
        row("X", 1, True, 1.0, sample=0, protocol=rep),
        row("X", 1, False, sample=1, protocol=rep),
        row("X", 1, False, sample=2, protocol=rep),
        row("Y", 1, False, sample=0, protocol=rep),
        row("Y", 1, False, sample=1, protocol=rep),
    ]
    (g,) = compute_groups(from_rows(rows))
    assert not g.under_sampled
    assert g.pass_at_k == pytest.approx((2 / 3 + 0) / 2)  # 1 - C(2,2)/C(3,2) = 2/3 for X
    assert g.pass_at_1 == pytest.approx((1 / 3 + 0) / 2)
    assert g.debug_rate is None and g.stagnation_rate is None and g.degenerate_rate is None
    assert g.p_sweep[1.0] == pytest.approx(1 / 3)
    assert g.p_sweep[1.5] == pytest.approx(0.0)


def test_repeated_self_source_lowers_k_and_under_sampling_is_reported() -> None:
    rep = proto(method="repeated", budget=3)
    rows = [
        row("X", 1, i == 0, 1.0 if i == 0 else None, sample=i, protocol=rep, self_source=True)
        for i in range(3)
    ]
    (g,) = compute_groups(from_rows(rows))
    assert g.pass_at_k == pytest.approx(1 - 1 / 3)  # k = 2: 1 - C(2,2)/C(3,2)
    (u,) = compute_groups(from_rows([{**r, "protocol": proto(method="repeated", budget=4)} for r in rows]))
    assert u.under_sampled
    assert u.pass_at_k is None and u.pass_at_1 is None


def test_infrastructure_errors_are_counted_not_scored() -> None:
    rows = [row("A", 1, False, infra_error=True), row("A", 2, True, 1.0), row("B", 1, False)]
    (g,) = compute_groups(from_rows(rows))
    assert g.n_infra_excluded == 1
    assert g.n_attempts == 2
    assert g.pass_at_1 == pytest.approx(0.0)  # A has no scored iteration 1
    assert g.pass_at_k == pytest.approx(0.5)


def test_source_models_side_table_sets_self_source() -> None:
    rows = [row("A", 1, False), row("A", 2, False), row("A", 3, True, 1.0)]
    table = from_rows(rows)
    assert compute_groups(table)[0].pass_at_k == pytest.approx(1.0)
    marked = apply_source_models(table, {"A": "org/M"})
    assert compute_groups(marked)[0].pass_at_k == pytest.approx(0.0)  # b = 2: iteration 3 not counted
    other = apply_source_models(table, {"A": "someone-else"})
    assert compute_groups(other)[0].pass_at_k == pytest.approx(1.0)


def test_swing_and_kendall_by_hand() -> None:
    rows = []
    scores = {"L2": {"m1": 0.0, "m2": 0.5, "m3": 1.0}, "L3": {"m1": 1.0, "m2": 0.5, "m3": 0.0}}
    for fb, by_model in scores.items():
        for model, share in by_model.items():
            for t, ok in enumerate([True, False] if share == 0.5 else [share == 1.0] * 2):
                rows.append(
                    row(f"T{t}", 1, ok, 1.0 if ok else None, model=model, protocol=proto(feedback=fb))
                )
    groups = compute_groups(from_rows(rows))
    sw = {s["model"]: s["swing"] for s in swing(groups) if s["from"] == "runs"}
    assert sw == pytest.approx({"m1": 1.0, "m2": 0.0, "m3": 1.0})
    delta = {s["model"]: s["delta"] for s in swing(groups) if s["from"] == "runs"}
    assert delta == pytest.approx({"m1": 1.0, "m2": 0.0, "m3": -1.0})  # L3 minus L2
    (kt,) = [k for k in kendall(groups) if k["from"] == "runs"]
    assert kt["axis"] == "feedback"
    assert kt["n_models"] == 3
    assert kt["tau"] == pytest.approx(-1.0)


def test_no_swing_or_contrast_mixes_the_baseline_a_gate_applies_to() -> None:
    """L2 gated on the reference against L3 gated on eager differ in two settings: no feedback swing, no
    feedback contrast. Gated on eager at L2 and L3 alike, they are one; the two gates at one level are a
    contrast of gate_baseline."""
    after = {"gate_mode": "after_run"}
    rows = []
    for fb, gated, ok in (("L2", "reference", True), ("L3", "eager", False), ("L2", "eager", False)):
        for model in ("m1", "m2"):
            p = proto(feedback=fb, **after, **({"gate_baseline": gated} if gated != "reference" else {}))
            rows.append(row("T0", 1, ok, 1.0 if ok else None, model=model, protocol=p))
    groups = compute_groups(from_rows(rows))
    by_axis = {(s["model"], s["axis"]): s for s in swing(groups) if s["from"] == "runs"}
    # L2 and L3 on eager: a feedback swing of 0; L2 on the reference beside L3 on eager: none
    assert sorted(by_axis) == [("m1", "feedback"), ("m2", "feedback")]
    assert by_axis[("m1", "feedback")]["swing"] == 0.0
    assert by_axis[("m1", "feedback")]["fixed"]["gate_baseline"] == "eager"
    axes = sorted(k["axis"] for k in kendall(groups) if k["from"] == "runs")
    assert axes == ["feedback", "gate_baseline"]


def brute_force(n: int, c: int, k: int) -> float:
    """Share of k-subsets of n samples (c of them successes) that hold a success."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_estimator_equals_enumeration(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert float(pass_at_k_estimator(n, c, k)) == pytest.approx(brute_force(n, c, k), abs=1e-9)


attempt = st.tuples(st.booleans(), st.one_of(st.none(), st.floats(0.05, 4.0)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(attempt, min_size=1, max_size=4), min_size=1, max_size=6))
def test_pass_at_k_bounds_pass_at_1_and_sweep_is_monotone(
    trajs: list[list[tuple[bool, float | None]]],
) -> None:
    rows = [
        row(f"T{t}", i + 1, ok, sp if ok else None, protocol=proto(budget=4))
        for t, traj in enumerate(trajs)
        for i, (ok, sp) in enumerate(traj)
    ]
    (g,) = compute_groups(from_rows(rows))
    assert g.pass_at_k is not None and g.pass_at_1 is not None
    assert g.pass_at_k >= g.pass_at_1 - 1e-12
    sweep = [g.p_sweep[p] for p in sorted(g.p_sweep)]
    assert all(a is not None and b is not None and a >= b - 1e-12 for a, b in pairwise(sweep))
    for rate in (g.debug_rate, g.stagnation_rate, g.degenerate_rate):
        assert rate is None or 0.0 <= rate <= 1.0
    assert not math.isnan(g.pass_at_k)
