"""Numbers across protocols (docs/metrics.md): signed swing per axis and Kendall's tau between protocols.

Three kinds of comparison, each reported with ``"from"`` saying which:
- ``runs``: groups run separately that differ in exactly one protocol setting (model and corpus equal), so
  a difference can be blamed on that setting;
- ``p_sweep``: the gate axis read from one group's own p sweep (the paper's p axis needs no second run);
- ``pairing``: a named pair of protocols that differ in more than one setting (the paper's iterative
  T = 0.7 against repeated T = 1.0), declared in the sweep file.
They read finished GroupMetrics and never touch the attempts table.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from beavertui.engine.metrics.compute import GroupMetrics
from beavertui.engine.metrics.kendall import kendall_tau_b
from beavertui.engine.metrics.table import PROTOCOL_FIELDS, ProtocolKey

#: The p values the gate axis is read at from one group's sweep (the paper's columns).
SWING_P: tuple[float, ...] = (0.0, 0.7, 1.5)


@dataclass(frozen=True)
class Pairing:
    """Two protocols compared by name: ``a`` and ``b`` give the settings that differ (protocol keys)."""

    name: str
    a: Mapping[str, Any]
    b: Mapping[str, Any]

    def fields(self) -> set[str]:
        return set(self.a) | set(self.b)

    def side(self, p: ProtocolKey) -> str | None:
        """``a``, ``b`` or None: which side of the pairing this protocol is."""
        d = _settings(p)
        for name, want in (("a", self.a), ("b", self.b)):
            if all(_same(d.get(k), v) for k, v in want.items()):
                return name
        return None

    def label(self, side: str) -> str:
        want = self.a if side == "a" else self.b
        return " ".join(f"{k}={v}" for k, v in want.items())


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, int | float) and isinstance(y, int | float) and not isinstance(x, bool):
        return math.isclose(float(x), float(y), rel_tol=0, abs_tol=1e-9)
    return bool(x == y)


#: The few-shot axis's strategies in order (the release's pivot_tables.py: matched, random, curated), after none.
FEW_SHOT_ORDER: tuple[str, ...] = ("none", "matched", "random", "curated")


def few_shot_parts(value: str) -> tuple[str, int, str]:
    """A few-shot axis value split: ``matched_K3`` -> (``matched``, 3, ``""``), ``random_K1_seed7`` ->
    (``random``, 1, ``seed7``), ``none`` -> (``none``, 0, ``""``) (session/protocol.py few_shot_label)."""
    strategy, _, rest = str(value).partition("_K")
    k, _, seed = rest.partition("_")
    return strategy, int(k) if k.isdigit() else 0, seed


def few_shot_order(value: str) -> tuple[int, str, int, str]:
    """The few-shot axis's order: none, then matched, random, curated (another strategy after them), each by
    seed (the release's first), then K."""
    strategy, k, seed = few_shot_parts(value)
    rank = FEW_SHOT_ORDER.index(strategy) if strategy in FEW_SHOT_ORDER else len(FEW_SHOT_ORDER)
    return (rank, seed, k, str(value))


def _order(axis: str, value: Any) -> Any:
    """Axis order of the signed delta: gate ascending, L0..L4, H1..H4, iterative then repeated, few-shot none
    then matched, random, curated, each by K."""
    if axis == "few_shot":
        return few_shot_order(str(value))
    return value if not isinstance(value, bool) else int(value)


def few_shot_arms(groups: Sequence[GroupMetrics]) -> list[tuple[GroupMetrics, ProtocolKey]]:
    """The groups of the few-shot axis (the release's Exp 5), each with its protocol less the examples
    (``few_shot`` none): every group with examples, and a group without that agrees with one of them on
    model, corpus and every other setting (its baseline); ordered by model, corpus, the other settings,
    then the axis's order (few_shot_order)."""
    from dataclasses import replace

    rest = [(g, replace(g.protocol, few_shot="none")) for g in groups]
    shown = {(g.model, g.corpus or "", r) for g, r in rest if g.protocol.few_shot != "none"}
    arms = [(g, r) for g, r in rest if (g.model, g.corpus or "", r) in shown]
    return sorted(
        arms, key=lambda a: (a[0].model, a[0].corpus or "", a[1], few_shot_order(a[0].protocol.few_shot))
    )


#: Every setting that tells two protocols apart: the protocol fields and the baseline the gate applies to
#: (written only when not the reference, so that ``as_dict`` leaves it out), which no swing or contrast may
#: mix unseen: pass@k against eager is not pass@k against the reference.
KEY_FIELDS: tuple[str, ...] = (*PROTOCOL_FIELDS, "gate_baseline")


def _settings(p: ProtocolKey) -> dict[str, Any]:
    return {f: getattr(p, f) for f in KEY_FIELDS}


def _rest(p: ProtocolKey, skip: set[str]) -> tuple[Any, ...]:
    d = _settings(p)
    return tuple(d[f] for f in KEY_FIELDS if f not in skip)


def _differs_only_in(a: ProtocolKey, b: ProtocolKey) -> str | None:
    da, db = _settings(a), _settings(b)
    diff = [f for f in KEY_FIELDS if da[f] != db[f]]
    return diff[0] if len(diff) == 1 else None


def _entry(
    model: str, corpus: str | None, axis: str, source: str, fixed: dict[str, Any], values: dict[str, float]
) -> dict[str, Any]:
    """One swing entry; ``values`` in axis order (the delta is the last minus the first)."""
    keys = list(values)
    hi = max(keys, key=lambda k: values[k])
    lo = min(keys, key=lambda k: values[k])
    return {
        "model": model,
        "corpus": corpus,
        "axis": axis,
        "from": source,
        "fixed": fixed,
        "values": values,
        "swing": values[hi] - values[lo],
        "max_at": hi,
        "min_at": lo,
        "delta": values[keys[-1]] - values[keys[0]],
    }


def _by_model(groups: Sequence[GroupMetrics]) -> dict[tuple[str, str | None], list[GroupMetrics]]:
    out: dict[tuple[str, str | None], list[GroupMetrics]] = defaultdict(list)
    for g in groups:
        if g.pass_at_k is not None:
            out[(g.model, g.corpus)].append(g)
    return out


def swing(groups: Sequence[GroupMetrics], pairings: Sequence[Pairing] = ()) -> list[dict[str, Any]]:
    """Per model and corpus: max minus min of pass@k over an axis's values, with the signed delta."""
    out: list[dict[str, Any]] = []
    by_model = _by_model(groups)
    for model, corpus in sorted(by_model, key=lambda k: (k[0], k[1] or "")):
        members = by_model[(model, corpus)]
        for axis in PROTOCOL_FIELDS:
            families: dict[tuple[Any, ...], list[GroupMetrics]] = defaultdict(list)
            for g in members:
                families[_rest(g.protocol, {axis})].append(g)
            for fam in families.values():
                vals = {getattr(g.protocol, axis): g.pass_at_k for g in fam}
                if len(vals) < 2:
                    continue
                ordered = {
                    str(k): float(v)
                    for k, v in sorted(vals.items(), key=lambda kv: _order(axis, kv[0]))
                    if v is not None
                }
                fixed = {k: v for k, v in fam[0].protocol.as_dict().items() if k != axis}
                out.append(_entry(model, corpus, axis, "runs", fixed, ordered))
        for g in members:
            sweep = {f"{p:.1f}": g.p_sweep.get(p) for p in SWING_P}
            if any(v is None for v in sweep.values()):
                continue
            e = _entry(model, corpus, "gate", "p_sweep", g.protocol.as_dict(), sweep)  # type: ignore[arg-type]
            e["bounds"] = {
                f"{p:.1f}": "exact" if g.p_sweep_exact.get(p, True) else "lower_bound" for p in SWING_P
            }
            out.append(e)
        for pairing in pairings:
            for a, b in _paired(members, pairing):
                assert a.pass_at_k is not None and b.pass_at_k is not None
                values = {pairing.label("a"): a.pass_at_k, pairing.label("b"): b.pass_at_k}
                fixed = {k: v for k, v in a.protocol.as_dict().items() if k not in pairing.fields()}
                out.append(_entry(model, corpus, pairing.name, "pairing", fixed, values))
    return out


def _paired(members: Sequence[GroupMetrics], pairing: Pairing) -> list[tuple[GroupMetrics, GroupMetrics]]:
    """(a, b) groups of one model that match the pairing's sides and agree on every other setting."""
    skip = pairing.fields()
    sides: dict[tuple[Any, ...], dict[str, GroupMetrics]] = defaultdict(dict)
    for g in members:
        side = pairing.side(g.protocol)
        if side is not None:
            sides[_rest(g.protocol, skip)][side] = g
    return [(s["a"], s["b"]) for s in sides.values() if "a" in s and "b" in s]


def kendall(groups: Sequence[GroupMetrics], pairings: Sequence[Pairing] = ()) -> list[dict[str, Any]]:
    """Kendall's tau-b between the models' pass@k under two protocols (same corpus): protocols that differ
    in one setting, the two sides of each named pairing, and pairs of p along one protocol's sweep."""
    scores: dict[tuple[str, ProtocolKey], dict[str, GroupMetrics]] = defaultdict(dict)
    for g in groups:
        if g.pass_at_k is not None:
            scores[(g.corpus or "", g.protocol)][g.model] = g
    out: list[dict[str, Any]] = []

    def add(a: ProtocolKey, b: ProtocolKey, axis: str, source: str, xa: dict[str, float], xb: dict[str, float],
            corpus: str, extra: dict[str, Any] | None = None) -> None:  # fmt: skip
        common = sorted(set(xa) & set(xb))
        if len(common) < 2:
            return
        tau, pval = kendall_tau_b([xa[m] for m in common], [xb[m] for m in common])
        out.append(
            {
                "corpus": corpus or None,
                "protocol_a": a.as_dict(),
                "protocol_b": b.as_dict(),
                "axis": axis,
                "from": source,
                **(extra or {}),
                "n_models": len(common),
                "models": common,
                "left_out": sorted(set(xa) ^ set(xb)),
                "tau": tau,
                "p_value": pval,
            }
        )

    def pk(cell: dict[str, GroupMetrics]) -> dict[str, float]:
        return {m: g.pass_at_k for m, g in cell.items() if g.pass_at_k is not None}

    for (ca, a), (cb, b) in combinations(sorted(scores, key=lambda k: (k[0], k[1])), 2):
        if ca != cb:
            continue
        axis = _differs_only_in(a, b)
        if axis is not None:
            add(a, b, axis, "runs", pk(scores[(ca, a)]), pk(scores[(cb, b)]), ca)
    for pairing in pairings:
        skip = pairing.fields()
        for (ca, a), (cb, b) in combinations(sorted(scores, key=lambda k: (k[0], k[1])), 2):
            if ca != cb or _rest(a, skip) != _rest(b, skip):
                continue
            sa, sb = pairing.side(a), pairing.side(b)
            if {sa, sb} != {"a", "b"}:
                continue
            if sa == "b":
                a, b = b, a
            add(a, b, pairing.name, "pairing", pk(scores[(ca, a)]), pk(scores[(ca, b)]), ca)
    for (corpus, proto), cell in sorted(scores.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        for p, q in combinations(SWING_P, 2):
            xp = {m: g.p_sweep[p] for m, g in cell.items() if g.p_sweep.get(p) is not None}
            xq = {m: g.p_sweep[q] for m, g in cell.items() if g.p_sweep.get(q) is not None}
            add(proto, proto, "gate", "p_sweep", xp, xq, corpus, {"p_a": p, "p_b": q})  # type: ignore[arg-type]
    return out
