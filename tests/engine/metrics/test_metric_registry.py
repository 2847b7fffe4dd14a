"""The metric registry (engine/metrics/registry.py): each per-group metric declared once, and what the
group object and the JSON output read from it."""

from __future__ import annotations

import dataclasses
from typing import Any

from beavertui.engine.metrics.compute import GroupMetrics, compute_groups
from beavertui.engine.metrics.registry import METRICS
from beavertui.engine.metrics.table import from_rows

IDENTITY = ("model", "corpus", "protocol", "cells")


def _row(task: str, it: int, correct: bool, method: str = "iterative", **kw: Any) -> dict[str, Any]:
    proto = {"method": method, "feedback": "L3", "history": 2, "temperature": 0.0, "gate": 0.7, "budget": 3}
    out = {
        "run_id": "r",
        "model": "m",
        "task_id": task,
        "protocol": proto,
        "sample": kw.pop("sample", 0),
        "iteration": it,
        "category": "passed" if correct else "functional_correctness",
        "correct": correct,
        "speedup": kw.pop("speedup", None),
        "stop_reason": None,
        "self_source": False,
    }
    return {**out, **kw}


def test_every_group_field_is_declared_once() -> None:
    names = [m.name for m in METRICS]
    assert len(names) == len(set(names))
    fields = [f.name for f in dataclasses.fields(GroupMetrics) if f.name not in IDENTITY]
    assert sorted(names) == sorted(fields)
    assert all(m.unit and m.definition for m in METRICS)
    keys = [m.key for m in METRICS if m.key is not None]
    assert len(keys) == len(set(keys))


def test_the_group_object_is_the_registry_in_order() -> None:
    rows = [
        _row("A", 1, False),
        _row("A", 2, True, speedup=0.5),
        _row("A", 3, True, speedup=0.9, stop_reason="passed"),
        _row("B", 1, False),
        _row("B", 2, False, stop_reason="no_progress"),
        *(_row("C", 1, s > 0, method="repeated", sample=s, speedup=1.0 if s else None) for s in range(3)),
    ]
    groups = compute_groups(from_rows(rows))
    assert {g.protocol.method for g in groups} == {"iterative", "repeated"}
    for g in groups:
        doc = g.as_json()
        keys = [m.key for m in METRICS if m.key is not None]
        assert list(doc) == ["model", "corpus", "protocol", *keys]
        for m in METRICS:
            if m.key is not None:
                assert doc[m.key] == m.json(getattr(g, m.name))
    it = next(g for g in groups if g.protocol.method == "iterative")
    assert it.as_json()["dominant_stagnation"] == "no_progress"
    assert [it.as_json()["p_sweep_bound"][p] for p in ("0.7", "1.0")] == ["exact", "lower_bound"]
    assert it.as_json()["p_sweep"]["0.0"] == 0.5


def test_the_tables_rates_are_the_registrys() -> None:
    from beavertui.engine.metrics.registry import P_SWEEP
    from beavertui.reports.tables import rates

    rows = [_row(t, 1, t == "A", speedup=1.2 if t == "A" else None) for t in "ABC"]
    rows += [_row("B", 2, True, speedup=0.5, speedup_lo=0.4, speedup_hi=0.6), _row("C", 2, False)]
    (g,) = compute_groups(from_rows(rows))
    r = rates(g, 200, 1)
    rated = [m for m in METRICS if m.rate is not None]
    means = [m.rate for m in rated if m.interval is not None and m.interval[0] == "mean"]
    ratios = [m.rate for m in rated if m.interval is not None and m.interval[0] == "ratio"]
    assert list(r) == [*means, *(f"p{p:.1f}" for p in P_SWEEP), *ratios]
    for m in rated:
        assert r[m.rate].value == getattr(g, m.name)
    assert r["degenerate_raw"].value == 1.0 and r["degenerate_raw"].lo == 1.0
