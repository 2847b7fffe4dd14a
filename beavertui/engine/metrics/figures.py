"""The numbers behind the figures of docs/metrics.md (Figures), read from the computed metrics.

Nothing here is a new metric: each function lays out what compute.py (GroupMetrics) and swing.py (swing
and Kendall entries) already hold, in the shape one figure draws. reports/svg_figures.py and the TUI's
metrics screen draw them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from beavertui.engine.metrics.compute import GroupMetrics
from beavertui.engine.session.protocol import DETECTORS

#: The parts of a stagnation-mode bar, in drawing order: the loop ended in success, each detector, and
#: never succeeded with no detector firing (budget spent).
STAGNATION_PARTS: tuple[str, ...] = ("repaired", *DETECTORS, "ran to K")

#: Edges of the speedup histogram's bins (x reference), a factor of sqrt(2) apart from 1/64 to 8: the
#: first bin also holds every speedup below 1/64, the last every one at 8 or above.
SPEEDUP_EDGES: tuple[float, ...] = tuple(2.0 ** (k / 2) for k in range(-12, 7))


def group_label(g: GroupMetrics) -> str:
    """``model | protocol``, as the p-sweep legend names a group."""
    return f"{g.model} | {g.protocol.short()}"


def stagnation_modes(groups: Sequence[GroupMetrics]) -> list[dict[str, Any]]:
    """Per iterative group with trajectories: how its trajectories ended, counted as the Table 1 columns
    count them. ``repaired`` = trajectories whose loop ended in success (n_trajectories -
    n_never_succeeded), one count per detector (stagnation_counts) and ``ran to K`` = never succeeded with
    no detector firing (n_never_succeeded - n_stagnated). ``shares`` are fractions of ``n``."""
    out = []
    for g in groups:
        if g.protocol.method == "repeated" or g.n_trajectories == 0:
            continue
        counts = {"repaired": g.n_trajectories - g.n_never_succeeded}
        counts.update({d: g.stagnation_counts.get(d, 0) for d in DETECTORS})
        counts["ran to K"] = g.n_never_succeeded - g.n_stagnated
        n = g.n_trajectories
        out.append(
            {
                "model": g.model,
                "label": group_label(g),
                "n": n,
                "counts": counts,
                "shares": {k: v / n for k, v in counts.items()},
                "stagnation_rate": g.stagnation_rate,
            }
        )
    return out


def bin_of(speedups: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The SPEEDUP_EDGES bin of each speedup (0 to len(SPEEDUP_EDGES) - 2)."""
    edges = np.asarray(SPEEDUP_EDGES)
    return np.clip(np.searchsorted(edges, speedups, side="right") - 1, 0, len(edges) - 2)


def speedup_histograms(groups: Sequence[GroupMetrics]) -> list[dict[str, Any]]:
    """Per group with a correct repair: the histogram of its repairs' speedups (repair_speedups) over
    SPEEDUP_EDGES (``counts``, and of those ``counts_below_gate``: below its gate p, correct but slower
    than the gate asks), how many in all are below it and below 1.0x, and how many repairs have no speedup
    (left out of the bins)."""
    out = []
    for g in groups:
        s = g.repair_speedups
        if s.size == 0 and g.n_repairs_unspeeded == 0:
            continue
        gate = g.protocol.gate
        bins = bin_of(s)
        counts = np.bincount(bins, minlength=len(SPEEDUP_EDGES) - 1)
        below = np.bincount(bins[s < gate], minlength=len(SPEEDUP_EDGES) - 1)
        out.append(
            {
                "model": g.model,
                "label": group_label(g),
                "gate": gate,
                "counts": [int(c) for c in counts],
                "counts_below_gate": [int(c) for c in below],
                "n": int(s.size),
                "below_gate": int((s < gate).sum()),
                "below_1": int((s < 1.0).sum()),
                "unspeeded": g.n_repairs_unspeeded,
                "median": float(np.median(s)) if s.size else None,
            }
        )
    return out


#: The protocol axes drawn as lines of pass@k over their values where runs of them are present.
LEVEL_AXES: tuple[str, ...] = ("feedback", "history", "few_shot")


#: How a value of a level axis is written on a figure: L0 as is, history 2 as H2, matched_K3 as matched K3.
LEVEL_NAME = {"feedback": "{}", "history": "H{}", "few_shot": "{}"}


def level_name(axis: str, value: str) -> str:
    """A value of a level axis as the figure writes it: L0, H2, ``none``, ``matched K3``
    (``random K1 seed7`` for another seed)."""
    if axis == "few_shot":
        from beavertui.engine.metrics.swing import few_shot_parts

        strategy, k, seed = few_shot_parts(value)
        return strategy if not k else " ".join(x for x in (strategy, f"K{k}", seed) if x)
    return LEVEL_NAME[axis].format(value)


def level_strand(axis: str, value: str) -> str:
    """Which stretch of a line a value belongs to: the few-shot axis's strategy (with its seed), so that a
    line joins a model's K of one strategy and never one strategy to the next; the other axes have one."""
    if axis != "few_shot":
        return ""
    from beavertui.engine.metrics.swing import few_shot_parts

    strategy, _, seed = few_shot_parts(value)
    return f"{strategy} {seed}".strip()


def _level_order(axis: str, value: str) -> tuple[Any, ...]:
    """History windows by number; feedback levels by their number, then the variants of one (L3, L3S...);
    few-shot values none, then matched, random, curated by K (swing.few_shot_order)."""
    if axis == "history":
        return (int(value), "")
    if axis == "few_shot":
        from beavertui.engine.metrics.swing import few_shot_order

        return few_shot_order(value)
    digits = "".join(c for c in value[1:3] if c.isdigit())
    return (int(digits) if digits else 99, value)


def level_panels(swing_entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per level axis (LEVEL_AXES): the swing entries of that axis from separate runs (``from`` = runs),
    each a line of one model's pass@k at the axis's values it ran, the other settings fixed. ``values``: the
    axis's values any line has, in axis order, as the figure writes them (L0, H2, matched K3); each line's
    ``points`` pairs such a value with pass@k (a fraction), and its ``segments`` split the points into the
    stretches a line joins: all of them on the feedback and history axes, one per strategy on the few-shot
    axis (``none`` a point of its own). A model with several lines on one axis (its other settings swept
    too) has the settings that tell them apart in its label."""
    out = []
    for axis in LEVEL_AXES:
        entries = [e for e in swing_entries if e["axis"] == axis and e.get("from") == "runs"]
        raw = sorted({str(v) for e in entries for v in e["values"]}, key=lambda v: _level_order(axis, v))
        lines = []
        for e in entries:
            mine = [o for o in entries if o["model"] == e["model"] and o.get("corpus") == e.get("corpus")]
            differ = sorted(k for k in e["fixed"] if len({str(o["fixed"].get(k)) for o in mine}) > 1)
            label = e["model"] + (
                " (" + " ".join(f"{k}={e['fixed'][k]}" for k in differ) + ")" if differ else ""
            )
            ordered = sorted((str(v) for v in e["values"]), key=lambda v: _level_order(axis, v))
            points = [(level_name(axis, v), float(e["values"][v])) for v in ordered]
            segments: dict[str, list[tuple[str, float]]] = {}
            for v, point in zip(ordered, points, strict=True):
                segments.setdefault(level_strand(axis, v), []).append(point)
            lines.append(
                {
                    "model": e["model"],
                    "label": label,
                    "points": points,
                    "segments": list(segments.values()),
                    "swing": e["swing"],
                }
            )
        out.append({"axis": axis, "values": [level_name(axis, v) for v in raw], "lines": lines})
    return out


def ranks(scores: Mapping[str, float]) -> dict[str, float]:
    """Rank of each model by score, 1 the highest; models with equal scores (ties as Kendall's tau-b counts
    them: exactly equal) share the mean of their ranks."""
    order = sorted(scores, key=lambda m: -scores[m])
    out: dict[str, float] = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for m in order[i : j + 1]:
            out[m] = (i + j) / 2 + 1
        i = j + 1
    return out


def _column_name(axis: str, value: Any) -> str:
    """How one value of a protocol axis heads a rank-chart column: L1, H2, p0.7, T0.7, K5, iterative."""
    prefix = {"history": "H", "gate": "p", "temperature": "T", "budget": "K"}.get(axis)
    if prefix is not None:
        return f"{prefix}{value:g}" if isinstance(value, float) else f"{prefix}{value}"
    return str(value) if axis in ("feedback", "method", "few_shot") else f"{axis}={value}"


def _column_order(axis: str, value: Any) -> tuple[Any, ...]:
    if axis in ("feedback", "few_shot"):
        return _level_order(axis, str(value))
    if isinstance(value, bool | int | float):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def rank_charts(
    groups: Sequence[GroupMetrics], kendall_entries: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The models' ranks behind each set of Kendall's tau entries (swing.kendall), a chart per set: the
    values of one protocol axis from separate runs (the other settings fixed), the two sides of a named
    pairing, or p = 0, 0.7 and 1.5 along one protocol's own sweep. Per chart: ``columns`` (their names, in
    axis order), ``scores`` (model -> pass@k per column, None where the model has no such group) and
    ``ranks`` (model -> its rank among the models of that column, 1 the highest pass@k, ties sharing the
    mean rank; None where absent), and ``taus``: each entry's tau-b with the columns it compares (``a``,
    ``b``: column indices), its model count and p-value, as the Kendall table gives them."""
    from beavertui.engine.metrics.swing import SWING_P
    from beavertui.engine.metrics.table import ProtocolKey

    by_key: dict[tuple[str, ProtocolKey], dict[str, GroupMetrics]] = {}
    for g in groups:
        if g.pass_at_k is not None:
            by_key.setdefault((g.corpus or "", g.protocol), {})[g.model] = g
    charts: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in kendall_entries:
        corpus = e.get("corpus") or ""
        a, b = ProtocolKey.from_mapping(e["protocol_a"]), ProtocolKey.from_mapping(e["protocol_b"])
        if e["from"] == "p_sweep":
            key: tuple[Any, ...] = (corpus, "p_sweep", a)
            chart = charts.setdefault(
                key,
                {"title": f"gate p along the p sweep of {a.short()}", "cols": {}, "entries": []},
            )
            for p in SWING_P:
                cell = by_key.get((corpus, a), {})
                chart["cols"][(0, p, "")] = (
                    _column_name("gate", p),
                    {m: g.p_sweep[p] for m, g in cell.items() if g.p_sweep.get(p) is not None},
                )
            chart["entries"].append((e, (0, e["p_a"], ""), (0, e["p_b"], "")))
            continue
        axis = e["axis"]
        if e["from"] == "runs":
            fixed = {k: v for k, v in e["protocol_a"].items() if k != axis}
            key = (corpus, "runs", axis, tuple(sorted((k, str(v)) for k, v in fixed.items())))
            rest = ProtocolKey.from_mapping(e["protocol_a"]).short()
            title = f"{axis} (separate runs; other settings as {rest}, {axis} aside)"
            ca, cb = _column_order(axis, getattr(a, axis)), _column_order(axis, getattr(b, axis))
            names = (_column_name(axis, getattr(a, axis)), _column_name(axis, getattr(b, axis)))
        else:  # a named pairing: its two sides
            key = (corpus, "pairing", axis, a, b)
            title = f"pairing {axis}"
            ca, cb = (0, 0.0, "a"), (0, 1.0, "b")
            names = (a.short(), b.short())
        chart = charts.setdefault(key, {"title": title, "cols": {}, "entries": []})
        for col, name, proto in ((ca, names[0], a), (cb, names[1], b)):
            cell = by_key.get((corpus, proto), {})
            chart["cols"][col] = (name, {m: g.pass_at_k for m, g in cell.items() if g.pass_at_k is not None})
        chart["entries"].append((e, ca, cb))
    out = []
    for key, chart in charts.items():
        order = sorted(chart["cols"])
        models = sorted({m for c in order for m in chart["cols"][c][1]})
        scores = {m: [chart["cols"][c][1].get(m) for c in order] for m in models}
        col_ranks = [ranks(chart["cols"][c][1]) for c in order]
        out.append(
            {
                "corpus": key[0] or None,
                "from": key[1],
                "title": chart["title"],
                "columns": [chart["cols"][c][0] for c in order],
                "scores": scores,
                "ranks": {m: [r.get(m) for r in col_ranks] for m in models},
                "taus": [
                    {
                        "a": order.index(ca),
                        "b": order.index(cb),
                        "tau": e["tau"],
                        "p_value": e["p_value"],
                        "n_models": e["n_models"],
                    }
                    for e, ca, cb in chart["entries"]
                ],
            }
        )
    return out
