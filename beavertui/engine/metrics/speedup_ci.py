"""The noise around one attempt's speedup: a 95% interval from its recorded timing samples.

A speedup is a ratio of two medians of noisy samples, so a candidate that is the reference itself can
measure 0.999x. Calling that "slower than the reference" is noise, not degeneration. The interval has two
parts, added in quadrature on the log scale:

1. **Within the measurement**, over the units that were sampled independently, never over the launches
   inside one of them:
   - process-level methods (``cupti``, ``ncu``, ``testbench_lines``, or any timing with ``runs``): every
     sample is one process run; Student's t on log times at Welch's degrees of freedom (timing/adaptive.py,
     the rule that stops sampling), honest at 3 runs a side;
   - round-based native methods (``beaver_time_ms``, ``native_inprocess``): the launches of a side come in
     ROUNDS interleaved rounds (3 x 20 by default); the samples are cut into that many contiguous batches
     (the rounds; batch means where a side budget timed fewer launches in a round), each batch gives
     ln(median reference / median candidate), and Student's t with ROUNDS - 1 degrees of freedom bounds
     their mean. Bootstrapping the 60 launches as if independent ignored the variance between rounds: on
     the H200 it called 8 of 31 reference resubmissions "slower than the reference"
     (tests/data/h200_batch_run_40.tar.gz, e.g. flashattn_v2_00 at 0.9990x [0.9982, 0.9995], the same
     reference timed 1.0003x two iterations later);
   - anything else with at least SMALL_SAMPLES a side (the kernelbench driver's interleaved trials, an
     unknown method): a percentile bootstrap of the ratio of medians (fixed seed).
2. **Between measurements**: NOISE_FLOOR_LOG_SD, the spread of ln(speedup) of the reference timed against
   itself in separate timing stages on the H200 (the 80 resubmissions of tests/data/h200_batch_run_40:
   sd 0.0062). Two timing stages of identical code differ by that much whatever their inner spread (the
   three rounds of flashattn_v2_00 agreed at 0.999x), so the interval never claims more than it.

With both, no reference resubmitted against itself in the recorded runs (tests/data: h200_batch_run_40,
release_batch, release_batch_final, release_kb_batch_final) is called slower than the reference, and the
same timings with the candidate 10% slower are. The interval reads samples and returns numbers; nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Resamples per bootstrap interval and the fixed seed (the same samples always give the same bounds).
RESAMPLES = 2000
SEED = 20240607
#: Fewest samples per side for an interval; with fewer the attempt has none (the raw rule applies).
MIN_SAMPLES = 3
#: Below this many samples on either side an unknown method's interval is Welch's t, not the bootstrap.
SMALL_SAMPLES = 10
#: Interleaved rounds of a native timing stage (TimingConfig.rounds).
ROUNDS = 3
#: Standard deviation of ln(speedup) between two timing stages of the same code: the reference against
#: itself on the H200 (80 timings, tests/data/h200_batch_run_40.tar.gz; recomputed in the tests).
NOISE_FLOOR_LOG_SD = 0.0062
#: Two-sided 95% normal quantile for the between-measurement part.
Z975 = 1.959963984540054

#: Methods whose samples are one process run each.
PROCESS_METHODS = frozenset({"cupti", "ncu", "testbench_lines"})
#: Methods whose samples are launches timed in interleaved rounds inside one stage.
ROUND_METHODS = frozenset({"beaver_time_ms", "native_inprocess"})


def _t975(df: float) -> float:
    from beavertui.engine.timing.adaptive import t975

    return float(t975(df))


def speedup_interval(
    reference_ms: Sequence[float],
    candidate_ms: Sequence[float],
    *,
    method: str | None = None,
    runs: int | None = None,
    rounds: int = ROUNDS,
    floor: float = NOISE_FLOOR_LOG_SD,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """(low, high) 95% bounds of the speedup around median(reference) / median(candidate): the interval over
    the independently sampled units of ``method`` (module docstring) widened in quadrature on the log scale
    by ``floor`` (the between-measurement noise; 0 for the within-measurement interval alone). None when
    either side has fewer than MIN_SAMPLES positive finite samples."""
    ref = np.asarray([x for x in reference_ms if np.isfinite(x) and x > 0], dtype=np.float64)
    cand = np.asarray([x for x in candidate_ms if np.isfinite(x) and x > 0], dtype=np.float64)
    if ref.size < MIN_SAMPLES or cand.size < MIN_SAMPLES:
        return None
    centre = float(np.median(ref) / np.median(cand))
    if method in PROCESS_METHODS or runs is not None:
        lo, hi = _welch_log_interval(ref, cand)
    elif method in ROUND_METHODS and min(ref.size, cand.size) >= 2 * rounds:
        lo, hi = _rounds_interval(ref, cand, rounds)
    elif min(ref.size, cand.size) < SMALL_SAMPLES:
        lo, hi = _welch_log_interval(ref, cand)
    else:
        rng = np.random.default_rng(seed)
        r = np.median(ref[rng.integers(0, ref.size, size=(resamples, ref.size))], axis=1)
        c = np.median(cand[rng.integers(0, cand.size, size=(resamples, cand.size))], axis=1)
        lo, hi = (float(x) for x in np.percentile(r / c, [2.5, 97.5]))
    if floor <= 0:
        return lo, hi
    extra = Z975 * floor
    below = math.log(centre) - math.log(lo) if lo > 0 else math.inf
    above = math.log(hi) - math.log(centre)
    below, above = math.hypot(max(below, 0.0), extra), math.hypot(max(above, 0.0), extra)
    return centre * math.exp(-below), centre * math.exp(above)


def _rounds_interval(ref: np.ndarray, cand: np.ndarray, rounds: int) -> tuple[float, float]:
    """Student's t over the rounds: ln(median reference / median candidate) of each of ``rounds``
    contiguous batches, their mean +/- t(rounds - 1) times its standard error, around the overall ratio."""
    logs = np.array(
        [
            math.log(float(np.median(r)) / float(np.median(c)))
            for r, c in zip(np.array_split(ref, rounds), np.array_split(cand, rounds), strict=True)
        ]
    )
    centre = math.log(float(np.median(ref) / np.median(cand)))
    half = _t975(rounds - 1) * float(np.std(logs, ddof=1)) / math.sqrt(rounds)
    # centred on the overall ratio of medians, and never narrower than the rounds' own spread around it
    off = float(logs.mean()) - centre
    return math.exp(centre + min(off, 0.0) - half), math.exp(centre + max(off, 0.0) + half)


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
