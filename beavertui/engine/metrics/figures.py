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
LEVEL_AXES: tuple[str, ...] = ("feedback", "history")


#: How a value of a level axis is written on a figure: L0 as is, history 2 as H2.
LEVEL_NAME = {"feedback": "{}", "history": "H{}"}


def _level_order(axis: str, value: str) -> tuple[Any, ...]:
    """History windows by number; feedback levels by their number, then the variants of one (L3, L3S...)."""
    if axis == "history":
        return (int(value), "")
    digits = "".join(c for c in value[1:3] if c.isdigit())
    return (int(digits) if digits else 99, value)


def level_panels(swing_entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per level axis (LEVEL_AXES): the swing entries of that axis from separate runs (``from`` = runs),
    each a line of one model's pass@k at the axis's values it ran, the other settings fixed. ``values``: the
    axis's values any line has, in axis order, as the figure writes them (L0, H2); each line's ``points``
    pairs such a value with pass@k (a fraction). A model with several lines on one axis (its other settings
    swept too) has the settings that tell them apart in its label."""
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
            points = [
                (LEVEL_NAME[axis].format(v), float(e["values"][v]))
                for v in sorted(e["values"], key=lambda v: _level_order(axis, str(v)))
            ]
            lines.append({"model": e["model"], "label": label, "points": points, "swing": e["swing"]})
        out.append({"axis": axis, "values": [LEVEL_NAME[axis].format(v) for v in raw], "lines": lines})
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
