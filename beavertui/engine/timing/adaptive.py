"""When a process-level timing (CUPTI, ncu: one sample per run of the test binary) has sampled enough.

Each run of a side costs a whole process (CUDA start-up included), so runs are added in (reference,
candidate) rounds only until the speedup is known well enough: at least ``min_runs`` a side, at most the
configured number, and no more once the 95% interval of the speedup lies within +/-``halfwidth`` of it.

The interval is that of the ratio of geometric means, on log times: ln(speedup) = mean(ln r) - mean(ln c),
its standard error sqrt(s_r^2 / n_r + s_c^2 / n_c) from the two samples' variances, and Student's t at
Welch's degrees of freedom (rounded down, so the interval is never narrower than Welch's). Timing noise is
multiplicative and close to symmetric on the log scale, where this interval is accurate even for 3 to 10
runs; the reported speedup stays the ratio of the medians (timing.md), which the interval brackets whenever
the samples are not skewed. Pure arithmetic; no I/O.
"""

from __future__ import annotations

import functools
import math
import statistics


@functools.lru_cache(maxsize=256)
def _t975_whole(k: int) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(k, 0.975))


def t975(df: float) -> float:
    """The 97.5% quantile of Student's t (scipy.special.stdtrit) at ``df`` degrees of freedom rounded down
    to a whole number, so the interval is never narrower than Welch's; infinite below one."""
    k = math.floor(df)
    if k < 1:
        return math.inf
    return _t975_whole(k)


def interval(reference: list[float], candidate: list[float]) -> tuple[float, float] | None:
    """The 95% interval of the speedup as (low, high) factors around it (e.g. (0.985, 1.016)), or None when
    either side has fewer than two positive samples."""
    lr = [math.log(x) for x in reference if x > 0 and math.isfinite(x)]
    lc = [math.log(x) for x in candidate if x > 0 and math.isfinite(x)]
    if len(lr) < 2 or len(lc) < 2:
        return None
    vr, vc = statistics.variance(lr) / len(lr), statistics.variance(lc) / len(lc)
    se2 = vr + vc
    if se2 == 0.0:
        return (1.0, 1.0)
    df = se2 * se2 / ((vr * vr / (len(lr) - 1) if vr else 0.0) + (vc * vc / (len(lc) - 1) if vc else 0.0))
    half = t975(df) * math.sqrt(se2)
    return (math.exp(-half), math.exp(half))


def halfwidth(reference: list[float], candidate: list[float]) -> float | None:
    """The larger side of the interval as a fraction of the speedup (0.02 = within +/-2%), or None."""
    got = interval(reference, candidate)
    if got is None:
        return None
    lo, hi = got
    return max(hi - 1.0, 1.0 - lo)


def enough(reference: list[float], candidate: list[float], min_runs: int, target: float) -> bool:
    """Whether sampling may stop: ``min_runs`` a side and the interval within +/-``target``."""
    if min(len(reference), len(candidate)) < max(2, min_runs):
        return False
    w = halfwidth(reference, candidate)
    return w is not None and w <= target


def note(reference: list[float], candidate: list[float], target: float) -> str:
    """What the timing result says about its sampling."""
    n = min(len(reference), len(candidate))
    w = halfwidth(reference, candidate)
    width = f"+/-{100 * w:.1f}%" if w is not None and math.isfinite(w) else "not known"
    met = w is not None and w <= target
    return f"{n} runs a side; the speedup's 95% interval is {width}" + (
        "" if met else f", wider than the +/-{100 * target:g}% that would have stopped sampling"
    )


def halfwidth_alone(samples: list[float]) -> float | None:
    """One side timed alone (a reference baseline): the larger side of the 95% interval of its geometric
    mean as a fraction of it, or None with fewer than two positive samples."""
    logs = [math.log(x) for x in samples if x > 0 and math.isfinite(x)]
    if len(logs) < 2:
        return None
    half = t975(len(logs) - 1) * math.sqrt(statistics.variance(logs) / len(logs))
    return max(math.exp(half) - 1.0, 1.0 - math.exp(-half))


def enough_alone(samples: list[float], min_runs: int, target: float) -> bool:
    """Whether sampling one side alone may stop: ``min_runs`` runs and its interval within +/-``target``."""
    if len(samples) < max(2, min_runs):
        return False
    w = halfwidth_alone(samples)
    return w is not None and w <= target


def note_alone(samples: list[float], target: float) -> str:
    """What a one-side timing says about its sampling."""
    w = halfwidth_alone(samples)
    width = f"+/-{100 * w:.1f}%" if w is not None and math.isfinite(w) else "not known"
    met = w is not None and w <= target
    return f"{len(samples)} runs; the time's 95% interval is {width}" + (
        "" if met else f", wider than the +/-{100 * target:g}% that would have stopped sampling"
    )
