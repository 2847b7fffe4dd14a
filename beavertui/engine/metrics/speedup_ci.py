"""The noise around one attempt's speedup: a 95% interval from its recorded timing samples.

A speedup is a ratio of two medians of noisy samples, so a candidate that is the reference itself can
measure 0.99999x. Calling that "slower than the reference" is noise, not degeneration.

With SMALL_SAMPLES or more a side (native timing, the kernelbench driver), the reference and candidate
samples are resampled independently (with replacement), the ratio of medians is taken in each resample,
and the 2.5th and 97.5th percentiles bound the speedup; the seed is fixed, so the same samples always give
the same interval. With fewer (CUPTI and ncu take one sample per process run, 3 to 10 a side), a percentile
bootstrap is far too narrow: the median of three resampled values takes a handful of values, and the
reference resubmitted unchanged, timed on the H200 at 0.9991x over 3 runs a side, came out "below 1.0".
There the interval is Student's t on log times at Welch's degrees of freedom (timing/adaptive.py, the rule
that stops sampling), which is honest at 3 samples. It reads samples and returns numbers; nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Resamples per interval and the fixed seed (the same samples always give the same bounds).
RESAMPLES = 2000
SEED = 20240607
#: Fewest samples per side for an interval; with fewer the attempt has none (the raw rule applies).
MIN_SAMPLES = 3
#: Below this many samples on either side the interval is Welch's t on log times, not the bootstrap.
SMALL_SAMPLES = 10


def speedup_interval(
    reference_ms: Sequence[float],
    candidate_ms: Sequence[float],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """(low, high) 95% bounds of the speedup: percentile bootstrap of median(reference) / median(candidate),
    or Welch's t on log times with fewer than SMALL_SAMPLES a side; None when either side has fewer than
    MIN_SAMPLES positive finite samples."""
    ref = np.asarray([x for x in reference_ms if np.isfinite(x) and x > 0], dtype=np.float64)
    cand = np.asarray([x for x in candidate_ms if np.isfinite(x) and x > 0], dtype=np.float64)
    if ref.size < MIN_SAMPLES or cand.size < MIN_SAMPLES:
        return None
    if min(ref.size, cand.size) < SMALL_SAMPLES:
        return _welch_log_interval(ref, cand)
    rng = np.random.default_rng(seed)
    r = np.median(ref[rng.integers(0, ref.size, size=(resamples, ref.size))], axis=1)
    c = np.median(cand[rng.integers(0, cand.size, size=(resamples, cand.size))], axis=1)
    lo, hi = np.percentile(r / c, [2.5, 97.5])
    return float(lo), float(hi)


def _welch_log_interval(ref: np.ndarray, cand: np.ndarray) -> tuple[float, float]:
    """The speedup's 95% interval as the ratio of geometric means, exp(mean ln r - mean ln c), plus or minus
    Student's t at Welch's degrees of freedom times its standard error (adaptive.interval's factors)."""
    from beavertui.engine.timing.adaptive import interval

    centre = float(np.exp(np.mean(np.log(ref)) - np.mean(np.log(cand))))
    lo, hi = interval(ref.tolist(), cand.tolist()) or (1.0, 1.0)
    return centre * lo, centre * hi


def is_degenerate(speedup: float | None, high: float | None) -> bool | None:
    """Slower than the reference beyond noise: the interval's upper bound is below 1.0; without an
    interval, the raw rule ``speedup < 1.0``. None when the speedup was not measured."""
    if speedup is None or speedup != speedup:
        return None
    if high is not None and high == high:
        return high < 1.0
    return speedup < 1.0
