"""Numbers across protocols (shared/spec/metrics.md): swing per axis and Kendall's tau between protocols.

Both compare groups that differ in exactly one protocol axis, so a difference can be blamed on that axis.
They read finished GroupMetrics and never touch the attempts table.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from beavertui.engine.metrics.compute import GroupMetrics
from beavertui.engine.metrics.table import PROTOCOL_FIELDS, ProtocolKey


def _rest(p: ProtocolKey, axis: str) -> tuple[Any, ...]:
    d = p.as_dict()
    return tuple(d[f] for f in PROTOCOL_FIELDS if f != axis)


def _differs_only_in(a: ProtocolKey, b: ProtocolKey) -> str | None:
    da, db = a.as_dict(), b.as_dict()
    diff = [f for f in PROTOCOL_FIELDS if da[f] != db[f]]
    return diff[0] if len(diff) == 1 else None


def swing(groups: Sequence[GroupMetrics]) -> list[dict[str, Any]]:
    """Per model and axis: max minus min of pass@k over that axis's values, other axes fixed."""
    out: list[dict[str, Any]] = []
    by_model: dict[str, list[GroupMetrics]] = defaultdict(list)
    for g in groups:
        if g.pass_at_k is not None:
            by_model[g.model].append(g)
    for model in sorted(by_model):
        for axis in PROTOCOL_FIELDS:
            families: dict[tuple[Any, ...], list[GroupMetrics]] = defaultdict(list)
            for g in by_model[model]:
                families[_rest(g.protocol, axis)].append(g)
            for members in families.values():
                values = {getattr(g.protocol, axis): g.pass_at_k for g in members}
                if len(values) < 2:
                    continue
                nums = [v for v in values.values() if v is not None]
                fixed = {k: v for k, v in members[0].protocol.as_dict().items() if k != axis}
                out.append(
                    {
                        "model": model,
                        "axis": axis,
                        "fixed": fixed,
                        "values": {str(k): values[k] for k in sorted(values)},
                        "swing": max(nums) - min(nums),
                    }
                )
    return out


def kendall(groups: Sequence[GroupMetrics]) -> list[dict[str, Any]]:
    """Kendall's tau-b between the models' pass@k under two protocols that differ in one axis."""
    scores: dict[ProtocolKey, dict[str, float]] = defaultdict(dict)
    for g in groups:
        if g.pass_at_k is not None:
            scores[g.protocol][g.model] = g.pass_at_k
    out: list[dict[str, Any]] = []
    for a, b in combinations(sorted(scores), 2):
        axis = _differs_only_in(a, b)
        if axis is None:
            continue
        common = sorted(set(scores[a]) & set(scores[b]))
        if len(common) < 2:
            continue
        from scipy.stats import kendalltau  # imported only when there is a pair (slow import)

        res = kendalltau([scores[a][m] for m in common], [scores[b][m] for m in common], variant="b")
        tau, pval = float(res.statistic), float(res.pvalue)
        out.append(
            {
                "protocol_a": a.as_dict(),
                "protocol_b": b.as_dict(),
                "axis": axis,
                "n_models": len(common),
                "tau": None if math.isnan(tau) else tau,
                "p_value": None if math.isnan(pval) else pval,
            }
        )
    return out
