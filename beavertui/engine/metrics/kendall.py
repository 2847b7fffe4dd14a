"""Kendall's tau-b between two rankings of the same models, and its two-sided p-value.

The numbers are ``scipy.stats.kendalltau(x, y, variant="b")``'s (method ``auto``), computed the same way:
pairs counted as concordant, discordant or tied; the p-value exact (Kendall's recurrence, as
``scipy.stats``' ``_kendall_p_exact``) when neither ranking has a tie and there are at most 33 models (or at
most one discordant or concordant pair), else from the normal approximation with the tie-corrected variance,
its tail read from ``scipy.special.ndtr``. Importing ``scipy.stats`` costs about 0.7 s of CPU, more than
all else ``beavertui metrics`` does on a small run; the models are few, so counting the pairs one by one is
instant. tests/engine/metrics/test_kendall.py checks the numbers equal scipy's, bit for bit, on many inputs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import combinations

import numpy as np


def _tie_stats(values: Sequence[float]) -> tuple[int, int, int]:
    """Pairs tied, and the two sums over tie groups of t(t-1)(t-2) and t(t-1)(2t+5) the variance needs."""
    groups = [t for t in Counter(values).values() if t > 1]
    return (
        sum(t * (t - 1) // 2 for t in groups),
        sum(t * (t - 1) * (t - 2) for t in groups),
        sum(t * (t - 1) * (2 * t + 5) for t in groups),
    )


def _p_exact(n: int, c: int) -> float:
    """Two-sided exact p-value of ``c`` concordant (or discordant) pairs among ``n`` untied values."""
    c = min(c, n * (n - 1) // 2 - c)
    if n <= 2:
        return 1.0
    if c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    else:  # reached only with at most 33 values: a c of 2 or more past that goes the normal approximation
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new)
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = 2.0 * np.sum(new) / math.factorial(n)
    return float(np.clip(prob, 0, 1))


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, float | None]:
    """(tau-b, two-sided p-value) of two equally long sequences; None for each where it is undefined (fewer
    than two values, every value of one side tied, a NaN)."""
    if len(x) != len(y):
        raise ValueError(f"two rankings of unequal length ({len(x)} and {len(y)})")
    size = len(x)
    if size == 0 or any(math.isnan(v) for v in (*x, *y)):
        return None, None
    dis = ntie = 0
    for i, j in combinations(range(size), 2):
        sx = (x[i] > x[j]) - (x[i] < x[j])
        sy = (y[i] > y[j]) - (y[i] < y[j])
        if sx == sy == 0:
            ntie += 1
        elif sx * sy < 0:
            dis += 1
    xtie, x0, x1 = _tie_stats(x)
    ytie, y0, y1 = _tie_stats(y)
    tot = size * (size - 1) // 2
    if xtie == tot or ytie == tot:
        return None, None
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = float(min(1.0, max(-1.0, con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie))))
    if xtie == 0 and ytie == 0 and (size <= 33 or min(dis, tot - dis) <= 1):
        return tau, _p_exact(size, tot - dis)
    from scipy.special import ndtr  # only with ties or many models (far lighter than scipy.stats)

    m = size * (size - 1.0)
    var = (m * (2 * size + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (size - 2))
    z = con_minus_dis / np.sqrt(var)
    pval = float(2 * ndtr(-np.abs(z)))
    return tau, (None if math.isnan(pval) else pval)
