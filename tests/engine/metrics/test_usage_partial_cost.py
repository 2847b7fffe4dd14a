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


def test_the_browser_and_the_header_count_the_plans_and_summaries_as_metrics_does() -> None:
    """A session's Tokens and Cost in the browser, and the session's total in the screen's header, read the
    end line's coder usage only: plan-transfer's $0.0069 (its planner's) showed as no cost, and a planned
    session's tokens left out its plans, where metrics counts them."""
    from beavertui.engine.session.events import SessionEnd
    from beavertui.engine.session.state import fold
    from beavertui.engine.session.store import read_session
    from beavertui.service.catalog import read_row
    from beavertui.tui.panes.header import _usage
    from beavertui.tui.view import View

    by_metrics = {key[2].short(): g.usage for key, g in run_usage(GPU).items()}
    for name, label in (
        ("plan-transfer", "iterative K5 L3 H4 T0.7 p0.7 plan+F planner=strong-planner"),
        ("plan-f", "iterative K5 L3 H4 T0.7 p0.7 plan+F"),
        ("summary", "iterative K5 L3S H4 T0.7 p0.7 summariser=summariser"),
    ):
        row = read_row(GPU / f"{name}.jsonl")
        want = by_metrics[label]
        assert (row.tokens, row.cost) == (want.tokens, want.cost_usd), name
    header, events, _ = read_session(GPU / "plan-transfer.jsonl")
    assert header is not None and isinstance(events[-1], SessionEnd)
    state = fold(header, events)
    text = _usage(View(state=state, cursor=1)).plain
    assert (
        "$0.0069" in text
        and f"{by_metrics['iterative K5 L3 H4 T0.7 p0.7 plan+F planner=strong-planner'].tokens / 1000:.1f}k tok"
        in text
    ), text
