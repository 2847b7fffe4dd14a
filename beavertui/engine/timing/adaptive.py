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

#: Student's t 97.5% quantile at 1 to 30 degrees of freedom, as scipy.special.stdtrit gives it (to the last
#: bit: tests/engine/timing/test_t975_table.py checks each). Every interval of the metrics' rounds (3 rounds:
#: 2 degrees of freedom) and of a few runs a side reads it here, so a metrics or export process does not
#: import scipy.special (about 0.2 s of CPU) for one number.
T975_TABLE = (
    12.706204736174694,
    4.302652729749462,
    3.1824463052837078,
    2.7764451051977934,
    2.5705818356363146,
    2.4469118511449786,
    2.364624251592784,
    2.306004135204166,
    2.262157162798205,
    2.228138851986274,
    2.200985160091639,
    2.1788128296672284,
    2.1603686564627913,
    2.144786687917804,
    2.131449545559776,
    2.1199052992212546,
    2.1098155778333156,
    2.1009220402410382,
    2.0930240544083087,
    2.085963447265864,
    2.0796138447276795,
    2.0738730679040254,
    2.0686576104190486,
    2.0638985616280245,
    2.0595385527532972,
    2.0555294386428735,
    2.0518305164802846,
    2.0484071417952454,
    2.045229642132703,
    2.0422724563012378,
)


@functools.lru_cache(maxsize=256)
def _t975_whole(k: int) -> float:
    if k <= len(T975_TABLE):
        return T975_TABLE[k - 1]
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
