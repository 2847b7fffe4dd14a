"""Kendall's tau-b without scipy.stats gives scipy.stats.kendalltau's numbers, bit for bit."""

from __future__ import annotations

import math
import random
import warnings

import pytest

from beavertui.engine.metrics.kendall import kendall_tau_b


def scipy_tau(x: list[float], y: list[float]) -> tuple[float | None, float | None]:
    """What the metrics read from scipy before: tau-b and its p-value, NaN as None."""
    from scipy.stats import kendalltau  # here, not at collection: 0.7 s of CPU a worker

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on one value or a NaN; the result is NaN either way
        res = kendalltau(list(x), list(y), variant="b")
    tau, pval = float(res.statistic), float(res.pvalue)
    return (None if math.isnan(tau) else tau), (None if math.isnan(pval) else pval)


def cases() -> list[tuple[list[float], list[float]]]:
    rng = random.Random(47)
    out: list[tuple[list[float], list[float]]] = []
    for n in [*range(1, 41), 45, 60, 90]:
        for _ in range(40 if n <= 12 else 8):
            # pass@k-like values: a few distinct levels (ties) or all distinct
            levels = rng.choice([2, 3, 5, n + 1, 1000])
            x = [rng.randrange(levels) / levels for _ in range(n)]
            y = [rng.randrange(levels) / levels for _ in range(n)]
            out.append((x, y))
            out.append((x, sorted(x)))  # near-perfect agreement: the exact p at one or no discordant pair
            out.append((x, [1 - v for v in x]))
    out += [([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]), ([0.1, float("nan"), 0.3], [0.1, 0.2, 0.3]), ([], [])]
    big = list(range(200))  # past 171 values: the exact p's own branch (c <= 1)
    out += [
        ([float(v) for v in big], [float(v) for v in big]),
        ([float(v) for v in big], [float(v) for v in big[::-1]]),
    ]
    swapped = [float(v) for v in big]
    swapped[0], swapped[1] = swapped[1], swapped[0]
    out.append(([float(v) for v in big], swapped))
    return out


def test_tau_b_and_p_equal_scipys_bit_for_bit() -> None:
    checked = exact = asymptotic = undefined = 0
    for x, y in cases():
        mine, theirs = kendall_tau_b(x, y), scipy_tau(x, y)
        assert mine == theirs, (x, y, mine, theirs)
        checked += 1
        if mine[0] is None:
            undefined += 1
        elif len(set(x)) == len(x) and len(set(y)) == len(y):
            exact += 1
        else:
            asymptotic += 1
    assert checked > 2000 and exact > 300 and asymptotic > 1000 and undefined > 100  # every branch was met


def test_unequal_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="unequal length"):
        kendall_tau_b([0.1, 0.2], [0.3])
