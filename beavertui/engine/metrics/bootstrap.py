"""Bootstrap 95% confidence intervals over tasks (percentile method, fixed seed; docs/metrics.md).

Resampling tasks with replacement is done as a (resamples x tasks) matrix of multiplicities, so every
rate of a group is resampled in one matrix product. It knows nothing about what the columns mean.
The rows are resampled in the order of their task ids, never in the order they arrive: the same tasks
give the same intervals whether they were read from a run folder, a CSV or a JSON Lines export.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

RESAMPLES = 1000
SEED = 20240601


@dataclass(frozen=True)
class Intervals:
    """Lower and upper 95% bounds per column; NaN where undefined."""

    mean_lo: F64
    mean_hi: F64
    ratio_lo: F64
    ratio_hi: F64


@lru_cache(maxsize=8)
def weights(n_tasks: int, resamples: int = RESAMPLES, seed: int = SEED) -> F64:
    """Multiplicity of each task in each resample, shape (resamples, tasks) (cached: read only)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_tasks, size=(resamples, n_tasks))
    flat = (np.arange(resamples)[:, None] * n_tasks + draws).ravel()
    w = np.bincount(flat, minlength=resamples * n_tasks).reshape(resamples, n_tasks).astype(np.float64)
    w.flags.writeable = False
    return w


def intervals(
    means: F64,
    nums: F64,
    dens: F64,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    *,
    tasks: Sequence[str],
) -> Intervals:
    """Intervals for per-task means (tasks, m) and pooled ratios sum(nums)/sum(dens) (tasks, r).

    ``tasks`` names the task of each row; the resampling draws rows by the sorted order of these ids.
    """
    n = means.shape[0]
    if len(tasks) != n:
        raise ValueError(f"{len(tasks)} task ids for {n} rows")
    if n and list(tasks) != sorted(tasks):
        order = np.asarray(sorted(range(n), key=lambda i: tasks[i]), dtype=np.int64)
        means, nums, dens = means[order], nums[order], dens[order]
    if n == 0:
        nan_m = np.full(means.shape[1], np.nan)
        nan_r = np.full(nums.shape[1], np.nan)
        return Intervals(nan_m, nan_m, nan_r, nan_r)
    w = weights(n, resamples, seed)
    boot_means = w @ means / n
    top, bottom = w @ nums, w @ dens
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)
    m_lo, m_hi = np.percentile(boot_means, [2.5, 97.5], axis=0)
    if nums.shape[1] == 0:
        r_lo = r_hi = np.zeros(0)
    else:
        with warnings.catch_warnings():  # a column no resample can define is all NaN: its bounds are NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            r_lo, r_hi = np.nanpercentile(ratios, [2.5, 97.5], axis=0)
    return Intervals(m_lo, m_hi, r_lo, r_hi)
