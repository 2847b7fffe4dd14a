"""The paper's definitions on small tables whose answers are worked out by hand (docs/metrics.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from beavertui.engine.metrics.compute import P_SWEEP, compute_groups
from beavertui.engine.metrics.speedup_ci import is_degenerate, speedup_interval
from beavertui.engine.metrics.swing import Pairing, kendall, swing
from beavertui.engine.metrics.table import ProtocolKey, from_rows
from beavertui.engine.session.protocol import Protocol, StagnationSettings
from tests.engine.metrics.test_metrics import proto, row


def paper(**kw: Any) -> dict[str, Any]:
    """The protocol object of a session run under the paper's default (K = 3 to keep tables short)."""
    key = Protocol(budget=3).key()
    return {**key, **kw}


def test_debug_rate_is_the_identity_over_per_task_means() -> None:
    """A: two trajectories, one recovers; B: passes at once; C: four trajectories, one recovers.

    Per task (pass@1, pass@k): A (0, 1/2), B (1, 1), C (0, 1/4); pass@1 = 1/3, pass@k = 7/12, so
    debug_rate@k = (7/12 - 1/3) / (1 - 1/3) = 3/8. Pooled over trajectories it would be 2/6 = 1/3.
    """
    p = paper()
    rows = [
        row("A", 1, False, protocol=p, sample=0),
        row("A", 2, True, 1.0, protocol=p, sample=0),
        row("A", 1, False, protocol=p, sample=1),
        row("A", 2, False, protocol=p, sample=1),
        row("B", 1, True, 1.0, protocol=p),
    ]
    rows += [row("C", 1, False, protocol=p, sample=s) for s in range(4)]
    rows += [row("C", 2, True, 1.0, protocol=p, sample=0)]
    (g,) = compute_groups(from_rows(rows))
    assert g.pass_at_1 == pytest.approx(1 / 3)
    assert g.pass_at_k == pytest.approx(7 / 12)
    assert g.debug_rate == pytest.approx(3 / 8)
    # the interval's columns are the same identity, so resampling every task once gives it back
    num, den = g.cells.nums[:, 0], g.cells.dens[:, 0]
    assert num.sum() / den.sum() == pytest.approx(3 / 8)


def test_speedup_interval_from_samples() -> None:
    # every sample equal: the interval within the measurement is a point
    assert speedup_interval([2.0] * 10, [4.0] * 10, floor=0) == pytest.approx((0.5, 0.5))
    # and the between-measurement floor widens it by 1.96 sd on the log scale, whatever the inner spread
    lo, hi = speedup_interval([2.0] * 10, [4.0] * 10)  # type: ignore[misc]
    assert np.log(hi / 0.5) == pytest.approx(1.959964 * 0.0062, rel=1e-4) and lo < 0.5
    # the reference resubmitted: same distribution on both sides, the interval straddles 1.0
    rng = np.random.default_rng(1)
    ref = list(1.0 + 0.02 * rng.standard_normal(20))
    cand = list(1.0 + 0.02 * rng.standard_normal(20))
    lo, hi = speedup_interval(ref, cand)  # type: ignore[misc]
    assert lo < 1.0 < hi
    assert speedup_interval(ref, cand) == speedup_interval(ref, cand)  # fixed seed
    # too few samples: no interval
    assert speedup_interval([1.0, 1.0], [1.0, 1.0, 1.0]) is None
    assert is_degenerate(0.99999, 1.02) is False
    assert is_degenerate(0.99999, None) is True  # the raw rule
    assert is_degenerate(0.5, 0.55) is True
    assert is_degenerate(None, None) is None


def test_degenerate_uses_the_interval_and_reports_the_raw_rule_beside_it() -> None:
    """First successes at iteration 2: A 0.99999x with an interval up to 1.02 (noise, not degenerate),
    B 0.5x with the interval below 1, C 0.9x without samples (raw rule: degenerate), D passes at once.
    degenerate_rate = 2/3, degenerate_rate_raw = 3/3, one of the three judged by the raw rule."""
    p = paper()
    rows = [
        row("A", 1, False, protocol=p),
        {**row("A", 2, True, 0.99999, protocol=p), "speedup_lo": 0.98, "speedup_hi": 1.02},
        row("B", 1, False, protocol=p),
        {**row("B", 2, True, 0.5, protocol=p), "speedup_lo": 0.45, "speedup_hi": 0.55},
        row("C", 1, False, protocol=p),
        row("C", 2, True, 0.9, protocol=p),
        row("D", 1, True, 0.5, protocol=p),
    ]
    (g,) = compute_groups(from_rows(rows))
    assert g.degenerate_rate == pytest.approx(2 / 3)
    assert g.degenerate_rate_raw == pytest.approx(1.0)
    assert (g.n_degenerate_judged, g.n_degenerate_fallback) == (3, 1)
    doc = g.as_json()
    assert doc["degenerate_rate_raw"] == pytest.approx(1.0) and doc["degenerate_fallback_raw"] == 1
    assert doc["degenerate_raw_noise_floor"] == pytest.approx(1 / 6)  # A alone within noise of 1.0


def test_the_raw_rules_noise_floor_is_half_the_first_successes_within_noise_of_the_reference() -> None:
    """First successes at iteration 2: A 0.99x and B 1.01x with intervals that hold 1.0 (the reference
    against itself, within noise: the raw rule calls such a timing below 1.0 half the time), C 0.5x below
    1.0 beyond noise, D 1.5x above it, E 0.9x without samples (its noise unknown). The raw rule calls A, C and
    E degenerate: 3/5; noise alone gives half of A and B: floor (1/2 x 2)/5 = 1/5, and the raw rate less the
    floor is the noise-aware rate, C and E: 2/5. A group whose first successes carry no interval has none."""
    from beavertui.reports.cells import Rate
    from beavertui.reports.tables import baselines_table, main_tables, rates

    p = paper()
    rows = [
        {**row("A", 2, True, 0.99, protocol=p), "speedup_lo": 0.98, "speedup_hi": 1.02},
        {**row("B", 2, True, 1.01, protocol=p), "speedup_lo": 0.99, "speedup_hi": 1.03},
        {**row("C", 2, True, 0.5, protocol=p), "speedup_lo": 0.45, "speedup_hi": 0.55},
        {**row("D", 2, True, 1.5, protocol=p), "speedup_lo": 1.4, "speedup_hi": 1.6},
        row("E", 2, True, 0.9, protocol=p),
    ]
    rows += [row(t, 1, False, protocol=p) for t in "ABCDE"]
    (g,) = compute_groups(from_rows(rows))
    assert g.degenerate_rate_raw == pytest.approx(3 / 5) and g.degenerate_rate == pytest.approx(2 / 5)
    assert g.degenerate_raw_noise_floor == pytest.approx(1 / 5)
    assert g.as_json()["degenerate_raw_noise_floor"] == pytest.approx(1 / 5)
    r = rates(g, 200, 1)
    assert r["degenerate_raw_floor"].value == pytest.approx(1 / 5)
    main = main_tables([g], group_rates=[r])[0]
    cell = main.rows[0][main.columns.index("raw noise floor")]
    assert isinstance(cell, Rate) and cell.value == pytest.approx(1 / 5)
    against = baselines_table([g], [r], [("reference", g)])
    assert against.columns[-1] == "raw noise floor"
    # no interval anywhere: the floor is unknown, not 0
    (h,) = compute_groups(from_rows([row("E", 2, True, 0.9, protocol=p), row("E", 1, False, protocol=p)]))
    assert h.degenerate_rate_raw == 1.0 and h.degenerate_raw_noise_floor is None


def test_after_run_gate_every_p_is_exact_and_in_loop_above_the_gate_is_a_bound() -> None:
    """After the run (the paper): A's first correct attempt is 1.2x, B's 0.5x; pass@k(p) asks whether it
    is >= p, so 0.0: 1, 0.5: 1, 0.7: 1/2, 1.0: 1/2, 1.5: 0, every entry exact."""
    p = paper()
    rows = [
        row("A", 1, False, protocol=p),
        row("A", 2, True, 1.2, protocol=p),
        row("B", 1, True, 0.5, protocol=p),
    ]
    (g,) = compute_groups(from_rows(rows))
    assert [g.p_sweep[x] for x in (0.0, 0.5, 0.7, 1.0, 1.5)] == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.0])
    assert g.pass_at_k == pytest.approx(0.5) and g.pass_at_1 == pytest.approx(0.0)
    assert all(g.p_sweep_exact.values())
    assert set(g.as_json()["p_sweep_bound"].values()) == {"exact"}
    inloop = paper(gate_mode="in_loop")
    (h,) = compute_groups(from_rows([{**r, "protocol": inloop} for r in rows]))
    assert [h.p_sweep_exact[x] for x in P_SWEEP] == [True] * 5 + [False] * 4  # 1.0, 1.5, 2.0, 3.0
    assert h.as_json()["p_sweep_bound"]["1.0"] == "lower_bound"
    spent = paper(gate_mode="in_loop", continue_after_pass=True)
    (k,) = compute_groups(from_rows([{**r, "protocol": spent} for r in rows]))
    assert all(k.p_sweep_exact.values())


def test_group_keys_split_every_behaviour_setting_and_the_corpus() -> None:
    base = paper()
    variants = [
        base,
        {**base, "continue_after_pass": True},
        {**base, "stagnation": "report"},
        {**base, "feedback_components": "compiler+runtime"},
        {**base, "sanitize": "on_failure+racecheck"},
        {**base, "gate_mode": "in_loop"},
    ]
    rows = [row("A", 1, True, 1.0, protocol=v) for v in variants]
    rows.append({**row("A", 1, True, 1.0, protocol=base), "corpus": "other-corpus"})
    groups = compute_groups(from_rows(rows))
    assert len(groups) == 7
    assert {g.corpus for g in groups} == {None, "other-corpus"}
    # the labels of the protocol objects of real protocols
    assert Protocol(continue_after_pass=True).key()["continue_after_pass"] is True
    assert Protocol(stagnation=StagnationSettings(stop=False)).key()["stagnation"] == "report"
    assert Protocol(feedback_components=("compiler",)).key()["feedback_components"] == "compiler"
    assert Protocol(feedback_components=()).key()["feedback_components"] == "none"
    assert Protocol(sanitize_on_failure=False).key()["sanitize"] == "none"
    assert Protocol().short() == "iterative K5 L3 H4 T0.7 p0.7"
    assert ProtocolKey.from_mapping(Protocol(gate_mode="in_loop").key()).short().endswith("in-loop")


def test_swing_along_p_from_one_run() -> None:
    """One group: A first correct at 1.2x, B at 0.5x. pass@k at p = 0.0, 0.7, 1.5 is 1, 1/2, 0: swing 1,
    signed delta (1.5 minus 0.0) -1, max at 0.0, min at 1.5."""
    p = paper()
    rows = [row("A", 1, True, 1.2, protocol=p), row("B", 1, True, 0.5, protocol=p)]
    (e,) = [s for s in swing(compute_groups(from_rows(rows))) if s["from"] == "p_sweep"]
    assert e["axis"] == "gate"
    assert e["values"] == pytest.approx({"0.0": 1.0, "0.7": 0.5, "1.5": 0.0})
    assert (e["swing"], e["delta"], e["max_at"], e["min_at"]) == (
        pytest.approx(1.0),
        pytest.approx(-1.0),
        "0.0",
        "1.5",
    )
    assert set(e["bounds"].values()) == {"exact"}


def test_kendall_along_p_between_models() -> None:
    """m1: A, B, C correct at 0.2x; m2: A at 1.6x, B and C fail; m3: A and B at 1.6x, C fails.
    pass@k at p = 0: m1 1 > m3 2/3 > m2 1/3; at p = 1.5: m3 2/3 > m2 1/3 > m1 0. Pairs (m1, m2) and
    (m1, m3) are discordant, (m2, m3) concordant: tau-b = (1 - 2) / 3 = -1/3."""
    p = paper()
    outcomes = {"m1": [0.2, 0.2, 0.2], "m2": [1.6, None, None], "m3": [1.6, 1.6, None]}
    rows = [
        row(task, 1, speed is not None, speed, protocol=p, model=model)
        for model, speeds in outcomes.items()
        for task, speed in zip("ABC", speeds, strict=True)
    ]
    groups = compute_groups(from_rows(rows))
    (kt,) = [k for k in kendall(groups) if k["from"] == "p_sweep" and (k["p_a"], k["p_b"]) == (0.0, 1.5)]
    assert kt["n_models"] == 3
    assert kt["tau"] == pytest.approx(-1 / 3)


def test_named_pairing_across_two_axes() -> None:
    """Iterative T0.7 against repeated T1.0 (K = 1, so the repeated estimator is c / n): m1 1 -> 0,
    m2 1/2 -> 1/2, m3 0 -> 1. Signed deltas (repeated minus iterative) -1, 0, +1; tau-b = -1."""
    it = paper(method="iterative", temperature=0.7, budget=1)
    rp = paper(method="repeated", temperature=1.0, budget=1)
    table = {
        "m1": ([True, True], [False, False]),
        "m2": ([True, False], [True, False]),
        "m3": ([False, False], [True, True]),
    }
    rows = []
    for model, (a, b) in table.items():
        for t, ok in enumerate(a):
            rows.append(row(f"T{t}", 1, ok, 1.0 if ok else None, model=model, protocol=it))
        for t, ok in enumerate(b):
            rows.append(row(f"T{t}", 1, ok, 1.0 if ok else None, model=model, protocol=rp))
    groups = compute_groups(from_rows(rows))
    pairing = Pairing(
        "method", {"method": "iterative", "temperature": 0.7}, {"method": "repeated", "temperature": 1.0}
    )
    # the two differ in two axes: no "runs" entry compares them
    assert [s for s in swing(groups) if s["from"] == "runs"] == []
    entries = {s["model"]: s for s in swing(groups, [pairing]) if s["from"] == "pairing"}
    assert {m: e["delta"] for m, e in entries.items()} == pytest.approx({"m1": -1.0, "m2": 0.0, "m3": 1.0})
    assert entries["m1"]["axis"] == "method"
    assert entries["m1"]["values"] == pytest.approx(
        {"method=iterative temperature=0.7": 1.0, "method=repeated temperature=1.0": 0.0}
    )
    (kt,) = [k for k in kendall(groups, [pairing]) if k["from"] == "pairing"]
    assert kt["axis"] == "method" and kt["n_models"] == 3 and kt["tau"] == pytest.approx(-1.0)
    assert kt["models"] == sorted(kt["models"]) and len(kt["models"]) == 3 and kt["left_out"] == []


def test_old_tables_read_with_the_legacy_protocol_keys() -> None:
    old = {
        "method": "iterative",
        "feedback": "L3",
        "history": 2,
        "temperature": 0.0,
        "gate": 0.7,
        "budget": 5,
    }
    key = ProtocolKey.from_mapping(old)
    assert key.gate_mode == "in_loop" and key.stagnation == "stop" and key.sanitize == "on_failure"
    assert from_rows([row("A", 1, True, 1.0, protocol=proto())]).protocols[0].in_loop


def test_few_samples_a_side_get_an_interval_that_is_honest_at_three() -> None:
    """The reference resubmitted unchanged, timed with CUPTI on the H200 (3 runs a side; from
    tests/data/release_batch): 0.9991x. A percentile bootstrap of three samples called it slower than the
    reference; Welch's t on log times brackets 1.0."""
    ref, cand = [0.201247, 0.201377, 0.201503], [0.201568, 0.201824, 0.201537]
    lo, hi = speedup_interval(ref, cand, method="cupti", runs=3, floor=0)  # type: ignore[misc]
    assert lo < 1.0 < hi and hi < 1.01
    assert not is_degenerate(0.9991, hi)
    # the bootstrap alone would not have bracketed it (the defect this guards against)
    rng = np.random.default_rng(20240607)
    r, c = np.asarray(ref), np.asarray(cand)
    boot = np.median(r[rng.integers(0, 3, (2000, 3))], 1) / np.median(c[rng.integers(0, 3, (2000, 3))], 1)
    assert np.percentile(boot, 97.5) < 1.0
    # a real slowdown is still one: 0.5x over three runs a side
    lo, hi = speedup_interval([1.0, 1.01, 0.99], [2.0, 2.02, 1.98], method="cupti")  # type: ignore[misc]
    assert hi < 0.52 and is_degenerate(0.5, hi)


def test_the_few_shot_axis_is_swung_and_ranked_like_the_others() -> None:
    """Groups that differ only in few_shot (the release's Exp 5 values) give a swing over that axis in the
    release's order (none, matched, random, curated; each by K) and Kendall's tau between its values.
    m1 solves 0, 1, 2, 1 of two tasks under none, matched_K1, random_K3, curated_K5: swing 1, delta 1/2.
    Under none the ranking is m2 (2) > m3 (1) > m1 (0); under random_K3 it is m1 (2) > m2 (1) > m3 (0):
    one concordant pair, two discordant, tau-b = -1/3."""

    def shots(strategy: str, k: int) -> dict[str, Any]:
        curated = "map.json" if strategy == "curated" else None
        p = Protocol(
            budget=1, few_shot=strategy, few_shot_k=k, few_shot_pool=("pool",), few_shot_curated=curated
        )  # type: ignore[arg-type]
        return paper(**p.key())

    arms = [paper(budget=1), shots("curated", 5), shots("random", 3), shots("matched", 1)]  # any order
    solved = {"m1": [0, 1, 2, 1], "m2": [2, 2, 1, 2], "m3": [1, 1, 0, 1]}
    order = {"none": 0, "curated_K5": 3, "random_K3": 2, "matched_K1": 1}
    rows = []
    for model, counts in solved.items():
        for arm in arms:
            n = counts[order[str(arm["few_shot"])]]
            rows += [
                row(t, 1, i < n, 1.0 if i < n else None, model=model, protocol=arm)
                for i, t in enumerate("AB")
            ]
    groups = compute_groups(from_rows(rows))
    assert {g.protocol.few_shot for g in groups} == set(order)
    (e,) = [s for s in swing(groups) if s["model"] == "m1" and s["axis"] == "few_shot"]
    assert list(e["values"]) == ["none", "matched_K1", "random_K3", "curated_K5"]
    assert e["values"] == pytest.approx({"none": 0.0, "matched_K1": 0.5, "random_K3": 1.0, "curated_K5": 0.5})
    assert (e["swing"], e["delta"], e["max_at"], e["min_at"]) == (
        pytest.approx(1.0),
        pytest.approx(0.5),
        "random_K3",
        "none",
    )
    taus = {
        (k["protocol_a"]["few_shot"], k["protocol_b"]["few_shot"]): k["tau"]
        for k in kendall(groups)
        if k["axis"] == "few_shot"
    }
    pair = taus.get(("none", "random_K3"), taus.get(("random_K3", "none")))
    assert pair == pytest.approx(-1 / 3)
    # a table written before the axis existed reads as none
    old = {k: v for k, v in paper().items() if k != "few_shot"}
    assert ProtocolKey.from_mapping(old).few_shot == "none"
