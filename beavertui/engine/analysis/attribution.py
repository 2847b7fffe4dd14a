"""Which feedback component made a repair succeed: Shapley and Banzhaf values over feedback subsets.

The game: players are feedback components (``compiler``, ``sanitizer``, ``timing``, ...); the value of a
coalition S is the share of branches from the same frozen step that reached an outcome (compiled,
correct, passes gate) when the feedback held only the components in S. Exact definitions, n players,
``v`` the mean outcome per subset:

- Shapley value  ``phi_i = sum_{S ⊆ N\\{i}} |S|! (n-|S|-1)! / n! * (v(S ∪ i) - v(S))``.
- Banzhaf value  ``beta_i = 2^-(n-1) * sum_{S ⊆ N\\{i}} (v(S ∪ i) - v(S))``.
- Pairwise terms, with ``D_ij v(S) = v(S ∪ ij) - v(S ∪ i) - v(S ∪ j) + v(S)`` over ``S ⊆ N\\{i,j}``:
  Shapley interaction index ``I_ij = sum |S|! (n-|S|-2)! / (n-1)! * D_ij v(S)`` (Grabisch 1997) and
  Banzhaf interaction ``B_ij = 2^-(n-2) * sum D_ij v(S)``.

Every index is linear in ``v``, so it is a weight matrix times the vector of subset means; aggregating
many frozen steps (a batch run) averages their games, which averages their indices. Intervals are
percentile bootstrap intervals (fixed seed): each resample redraws the frozen steps with replacement
and, within each, every subset's samples with replacement. Pure: numbers in, numbers out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import factorial

import numpy as np
from numpy.typing import NDArray

from beavertui.engine.errors import BeaverError

MEASURES: tuple[str, ...] = ("compiled", "correct", "passed")
"""The three outcome measures of an attribution run."""

Subset = frozenset[str]
Game = Mapping[Subset, Sequence[float]]
"""Outcomes (0/1 or any number) of every sample, per subset of components."""


class AttributionError(BeaverError):
    """The outcomes do not form a complete game (a subset is missing or has no sample)."""


@dataclass(frozen=True)
class Estimate:
    """A point value with its bootstrap interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Attribution:
    """Shapley and Banzhaf values and pairwise interactions of one outcome measure."""

    components: tuple[str, ...]
    shapley: dict[str, Estimate]
    banzhaf: dict[str, Estimate]
    shapley_interaction: dict[tuple[str, str], Estimate]
    banzhaf_interaction: dict[tuple[str, str], Estimate]
    subset_means: dict[Subset, float]
    """v(S): the mean outcome per subset (averaged over frozen steps)."""
    samples: int
    """Samples in all (over subsets and steps)."""
    steps: int
    """Frozen steps (games) aggregated."""
    confidence: float
    resamples: int | None = None
    """Bootstrap resamples behind every interval (None: a saved attribution from before they were kept)."""
    seed: int | None = None
    """The bootstrap's random seed (the intervals are reproducible; None as ``resamples``)."""


def subsets(components: Sequence[str]) -> list[Subset]:
    """Every subset, ordered by bitmask (bit k = components[k])."""
    n = len(components)
    return [frozenset(c for k, c in enumerate(components) if mask >> k & 1) for mask in range(1 << n)]


def _pairs(n: int) -> list[tuple[int, int]]:
    return list(combinations(range(n), 2))


def weights(n: int, index: str) -> NDArray[np.float64]:
    """Rows: players (or pairs, for interactions); columns: subsets by bitmask. index = value @ v."""
    if index in ("shapley", "banzhaf"):
        w = np.zeros((n, 1 << n))
        for i in range(n):
            for mask in range(1 << n):
                if mask >> i & 1:
                    continue
                s = bin(mask).count("1")
                c = (
                    factorial(s) * factorial(n - s - 1) / factorial(n)
                    if index == "shapley"
                    else 2.0 ** -(n - 1)
                )
                w[i, mask | 1 << i] += c
                w[i, mask] -= c
        return w
    if index in ("shapley_interaction", "banzhaf_interaction"):
        pairs = _pairs(n)
        w = np.zeros((len(pairs), 1 << n))
        for row, (i, j) in enumerate(pairs):
            for mask in range(1 << n):
                if mask >> i & 1 or mask >> j & 1:
                    continue
                s = bin(mask).count("1")
                if index == "shapley_interaction":
                    c = factorial(s) * factorial(n - s - 2) / factorial(n - 1)
                else:
                    c = 2.0 ** -(n - 2)
                w[row, mask | 1 << i | 1 << j] += c
                w[row, mask | 1 << i] -= c
                w[row, mask | 1 << j] -= c
                w[row, mask] += c
        return w
    raise ValueError(f"unknown index {index!r}")


def _game_arrays(components: Sequence[str], game: Game) -> list[NDArray[np.float64]]:
    out = []
    for s in subsets(components):
        values = game.get(s)
        if not values:
            names = ",".join(c for c in components if c in s) or "(none)"
            raise AttributionError(f"no outcome for the feedback subset {{{names}}}")
        out.append(np.asarray(values, dtype=float))
    return out


def attribute(
    components: Sequence[str],
    games: Sequence[Game],
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Attribution:
    """Shapley, Banzhaf and interaction indices of ``components`` over one or more frozen steps' games."""
    components = tuple(components)
    n = len(components)
    if n < 1:
        raise AttributionError("attribution needs at least one component")
    if len(set(components)) != n:
        raise AttributionError("components must be distinct")
    if not games:
        raise AttributionError("no frozen step to attribute over")
    data = [_game_arrays(components, g) for g in games]
    point = np.mean([[a.mean() for a in arrays] for arrays in data], axis=0)

    rng = np.random.default_rng(seed)
    n_steps = len(data)
    # means[s, b, k]: resample b's mean outcome of subset k at step s.
    means = np.empty((n_steps, resamples, 1 << n))
    for s, arrays in enumerate(data):
        for k, a in enumerate(arrays):
            idx = rng.integers(0, len(a), size=(resamples, len(a)))
            means[s, :, k] = a[idx].mean(axis=1)
    if n_steps > 1:
        chosen = rng.integers(0, n_steps, size=(resamples, n_steps))
        boot = means[chosen, np.arange(resamples)[:, None], :].mean(axis=1)
    else:
        boot = means[0]
    alpha = (1.0 - confidence) / 2.0

    def estimates(index: str) -> list[Estimate]:
        w = weights(n, index)
        values = w @ point
        draws = boot @ w.T
        lo = np.quantile(draws, alpha, axis=0)
        hi = np.quantile(draws, 1.0 - alpha, axis=0)
        return [Estimate(float(v), float(a), float(b)) for v, a, b in zip(values, lo, hi, strict=True)]

    pair_names = [(components[i], components[j]) for i, j in _pairs(n)]
    return Attribution(
        components=components,
        shapley=dict(zip(components, estimates("shapley"), strict=True)),
        banzhaf=dict(zip(components, estimates("banzhaf"), strict=True)),
        shapley_interaction=dict(zip(pair_names, estimates("shapley_interaction"), strict=True)),
        banzhaf_interaction=dict(zip(pair_names, estimates("banzhaf_interaction"), strict=True)),
        subset_means={s: float(v) for s, v in zip(subsets(components), point, strict=True)},
        samples=sum(len(a) for arrays in data for a in arrays),
        steps=n_steps,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )


CONTROLS: tuple[str, ...] = ("none", "random", "dummy_plan", "full")
"""The control conditions: no feedback (the empty subset), randomised feedback, every feedback component
with a fixed content-free plan in place of the planner's (a planning protocol), every component."""
CONTRASTS: tuple[tuple[str, str, str], ...] = (
    ("full-random", "full", "random"),
    ("random-none", "random", "none"),
    ("full-none", "full", "none"),
    ("full-dummy_plan", "full", "dummy_plan"),
)
"""(name, a, b): the difference a - b of two controls, over the frozen steps that ran both."""
CONTROL_LABELS: dict[str, str] = {
    "none": "no feedback (empty subset)",
    "random": "randomised feedback",
    "dummy_plan": "dummy plan (content-free, every feedback component)",
    "full": "every component",
    "full-random": "every component - randomised",
    "random-none": "randomised - no feedback",
    "full-none": "every component - no feedback",
    "full-dummy_plan": "every component - dummy plan",
}
"""How tables name the controls and contrasts."""


def control_text(name: str, value: float, low: float, high: float) -> str:
    """A control's mean outcome as ``0.50 [0.25, 0.75]``; a contrast (a difference) signed: ``+0.50 [...]``."""
    f = "{:.2f}" if name in CONTROLS else "{:+.2f}"
    return f"{f.format(value)} [{f.format(low)}, {f.format(high)}]"


def control_estimates(
    steps: Sequence[Mapping[str, Sequence[float]]],
    *,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Estimate]:
    """Mean outcome of each control condition and of each contrast, averaged over the frozen steps that
    have them, with percentile bootstrap intervals (steps and, within each, samples redrawn). A condition
    or contrast no step has is left out."""
    rng = np.random.default_rng(seed)
    alpha = (1.0 - confidence) / 2.0
    draws: list[dict[str, NDArray[np.float64]]] = []
    for step in steps:
        d: dict[str, NDArray[np.float64]] = {}
        for name in CONTROLS:
            values = np.asarray(step.get(name, ()), dtype=float)
            if values.size:
                idx = rng.integers(0, values.size, size=(resamples, values.size))
                d[name] = values[idx].mean(axis=1)
        draws.append(d)
    point_steps = [{k: float(np.mean(v)) for k, v in step.items() if len(v)} for step in steps]

    def estimate(per_step: list[tuple[float, NDArray[np.float64]]]) -> Estimate:
        points = np.array([p for p, _ in per_step])
        boot = np.stack([b for _, b in per_step])  # (steps, resamples)
        if len(per_step) > 1:
            chosen = rng.integers(0, len(per_step), size=(resamples, len(per_step)))
            boot_means = boot[chosen, np.arange(resamples)[:, None]].mean(axis=1)
        else:
            boot_means = boot[0]
        lo, hi = np.quantile(boot_means, [alpha, 1.0 - alpha])
        return Estimate(float(points.mean()), float(lo), float(hi))

    out: dict[str, Estimate] = {}
    for name in CONTROLS:
        have = [(p[name], d[name]) for p, d in zip(point_steps, draws, strict=True) if name in d]
        if have:
            out[name] = estimate(have)
    for name, a, b in CONTRASTS:
        have = [
            (p[a] - p[b], d[a] - d[b]) for p, d in zip(point_steps, draws, strict=True) if a in d and b in d
        ]
        if have:
            out[name] = estimate(have)
    return out


def to_json(attribution: Attribution) -> dict[str, object]:
    """A JSON-ready object: values with intervals per component and per pair, and the subset means."""

    def est(e: Estimate) -> dict[str, float]:
        return {"value": e.value, "low": e.low, "high": e.high}

    return {
        "components": list(attribution.components),
        "shapley": {c: est(e) for c, e in attribution.shapley.items()},
        "banzhaf": {c: est(e) for c, e in attribution.banzhaf.items()},
        "shapley_interaction": {"+".join(p): est(e) for p, e in attribution.shapley_interaction.items()},
        "banzhaf_interaction": {"+".join(p): est(e) for p, e in attribution.banzhaf_interaction.items()},
        "subset_means": {
            "+".join(c for c in attribution.components if c in s) or "none": v
            for s, v in attribution.subset_means.items()
        },
        "samples": attribution.samples,
        "steps": attribution.steps,
        "confidence": attribution.confidence,
        "resamples": attribution.resamples,
        "seed": attribution.seed,
    }


def from_json(obj: Mapping[str, object]) -> Attribution:
    """The Attribution that ``to_json`` wrote (for a pane showing a saved attribution run)."""
    components = tuple(str(c) for c in obj["components"])  # type: ignore[attr-defined]

    def est(d: object) -> Estimate:
        assert isinstance(d, Mapping)
        return Estimate(float(d["value"]), float(d["low"]), float(d["high"]))

    def table(key: str) -> Mapping[str, object]:
        value = obj[key]
        assert isinstance(value, Mapping)
        return value

    pairs = [(a, b) for i, a in enumerate(components) for b in components[i + 1 :]]
    by_label = {"+".join(c for c in components if c in s) or "none": s for s in subsets(components)}
    return Attribution(
        components=components,
        shapley={c: est(table("shapley")[c]) for c in components},
        banzhaf={c: est(table("banzhaf")[c]) for c in components},
        shapley_interaction={p: est(table("shapley_interaction")["+".join(p)]) for p in pairs},
        banzhaf_interaction={p: est(table("banzhaf_interaction")["+".join(p)]) for p in pairs},
        subset_means={by_label[k]: float(v) for k, v in table("subset_means").items()},  # type: ignore[arg-type]
        samples=int(obj["samples"]),  # type: ignore[call-overload]
        steps=int(obj["steps"]),  # type: ignore[call-overload]
        confidence=float(obj["confidence"]),  # type: ignore[arg-type]
        resamples=None if obj.get("resamples") is None else int(obj["resamples"]),  # type: ignore[call-overload]
        seed=None if obj.get("seed") is None else int(obj["seed"]),  # type: ignore[call-overload]
    )
