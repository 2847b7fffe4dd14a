"""A cost summed over some replies only is said to be a lower bound: the recorded plan-transfer session of
tests/data/planning/gpu had its planner (`strong-planner`) priced and its coder not, and `metrics` printed
the planner's $0.0069 as the session's cost, per session and per repair, and as the whole run's, averaged
over five sessions whose coders have no price."""

from __future__ import annotations

from pathlib import Path

from beavertui.engine.metrics.usage import run_usage, total
from beavertui.service.metrics import compute, with_tables

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "tests" / "data" / "planning" / "gpu"


def test_a_cost_of_some_replies_only_is_a_lower_bound() -> None:
    usage = run_usage(GPU)
    partial = {key[2].planner: g for key, g in usage.items() if g.partial_cost}
    assert list(partial) == ["strong-planner"]
    g = partial["strong-planner"]
    assert g.unpriced == 2 and g.usage.replies == 4 and g.usage.cost_usd is not None
    assert all(not u.partial_cost and u.usage.cost_usd is None for u in usage.values() if u is not g)
    assert total(usage).partial_cost and total(usage).unpriced == 15
    report = with_tables(compute(GPU), resamples=20)
    table = next(t for t in report.tables if t.name == "usage")
    costs = {(str(r[0]), str(r[1])): r[8] for r in table.rows}
    for (model, proto), cost in costs.items():
        if "strong-planner" in proto or model == "whole run":
            assert str(cost).startswith(">=$"), (model, proto)
        else:
            assert cost == "-", (model, proto)
    assert ">=: a lower bound" in table.note
