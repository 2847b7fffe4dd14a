"""Every per-group metric of docs/metrics.md, declared once: its field, its key in the JSON group object, its
unit, its definition, and how it is computed from a group's sums over its tasks.

compute.py reduces the attempts table to one GroupSums per (model, corpus, protocol) group; each Metric turns
those sums into one field of GroupMetrics, and GroupMetrics.as_json writes the fields in this order under
their keys. Adding a metric: a field on GroupMetrics, an entry here, and, when no existing sum serves, a sum
in compute.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from beavertui.engine.metrics.table import ProtocolKey
from beavertui.engine.session.protocol import DETECTORS

F64 = npt.NDArray[np.float64]

#: The p values of the p sweep (docs/metrics.md); their interval columns of TaskCells.means start at 2.
P_SWEEP: tuple[float, ...] = (0.0, 0.1, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0)

#: Columns of GroupSums.nums and .dens (and of TaskCells'): the ratio metrics.
DEBUG, STAGNATION, DEGENERATE, DEGENERATE_RAW, NOISE_FLOOR = range(5)


@dataclass(frozen=True)
class GroupSums:
    """One group's values summed (or averaged) over its tasks: what every metric is computed from."""

    protocol: ProtocolKey
    n_tasks: int
    under_sampled: bool
    """Repeated sampling with fewer than K samples of some task."""
    means: F64
    """(2 + len(P_SWEEP),): per-task pass@1, pass@k at the gate, then pass@k at each p, averaged over tasks."""
    nums: F64
    """(5,): numerators of debug_rate@k, stagnation_rate, degenerate_rate, degenerate_rate_raw and
    degenerate_raw_noise_floor."""
    dens: F64
    """(5,): their denominators."""
    detectors: F64
    """(len(DETECTORS),): stagnated trajectories per detector, in DETECTORS' order."""
    n_fallback: float
    """First successes judged by the raw rule for want of timing samples."""
    compile_at_1: float
    first_ok_iterations: float
    """Sum of the iteration of the first correct attempt, over trajectories that have one."""
    n_first_ok: float
    n_self_source: int
    n_trajectories: int
    n_attempts: int
    n_infra_excluded: int
    n_flagged_successes: int
    n_unstable_successes: int
    repair_speedups: F64
    """Ascending: the speedup each repaired trajectory's pass@k(p) is held against p."""
    n_repairs_unspeeded: int

    @property
    def repeated(self) -> bool:
        return self.protocol.method == "repeated"

    @property
    def n_stagnated(self) -> float:
        return float(self.detectors.sum())

    @property
    def dominant(self) -> int:
        """Index in DETECTORS of the most frequent detector (the first of ties), -1 if none stopped any."""
        return int(np.argmax(self.detectors)) if self.n_stagnated > 0 else -1

    def rate(self, x: float) -> float | None:
        """A task mean, None for an under-sampled group."""
        return None if self.under_sampled else float(x)


def _same(x: Any) -> Any:
    return x


@dataclass(frozen=True)
class Metric:
    name: str
    """The GroupMetrics field."""
    key: str | None
    """The key in the JSON group object (docs/metrics.md); None: not in it."""
    unit: str
    definition: str
    value: Callable[[GroupSums], Any]
    json: Callable[[Any], Any] = _same
    """The field's value as the JSON group object writes it."""
    rate: str | None = None
    """For a rate the tables print with its bootstrap interval: its name in reports.tables.rates."""
    interval: tuple[str, int] | None = None
    """Where bootstrap.intervals puts that interval: ("mean", column of TaskCells.means) or ("ratio", column
    of TaskCells.nums and .dens)."""


def ratio(num: float, den: float) -> float | None:
    return float(num / den) if den > 0 else None


def debug_rate(pass_1: float, pass_k: float) -> float | None:
    """debug_rate@k = (pass@k - pass@1) / (1 - pass@1) over per-task means; None when pass@1 is 1."""
    if 1.0 - pass_1 <= 1e-12:
        return None
    return float((pass_k - pass_1) / (1.0 - pass_1))


def sweep_exact(proto: ProtocolKey, p: float) -> bool:
    """Whether pass@k(p) is exact under this protocol: always after the run (the paper's gate), for
    repeated sampling and with the whole budget spent; with an in-loop gate only for p up to it."""
    if proto.method == "repeated" or not proto.in_loop or proto.continue_after_pass:
        return True
    return p <= proto.gate + 1e-12


def _iterative(value: Callable[[GroupSums], Any], repeated: Any = None) -> Callable[[GroupSums], Any]:
    """A metric of the iterative loop: ``repeated`` (None or 0) for a repeated-sampling group."""
    return lambda s: repeated if s.repeated else value(s)


def _dominant_share(s: GroupSums) -> float | None:
    d = s.dominant
    return None if d < 0 else float(s.detectors[d] / s.n_stagnated)


METRICS: tuple[Metric, ...] = (
    Metric("n_tasks", "n_tasks", "tasks", "tasks with at least one scored attempt", lambda s: s.n_tasks),
    Metric("k", "k", "attempts", "the protocol's budget K", lambda s: s.protocol.budget),
    Metric(
        "pass_at_1",
        "pass@1",
        "fraction",
        "the first attempt succeeds at the gate",
        lambda s: s.rate(s.means[0]),
        rate="pass@1",
        interval=("mean", 0),
    ),
    Metric(
        "pass_at_k",
        "pass@k",
        "fraction",
        "some counted attempt succeeds at the gate",
        lambda s: s.rate(s.means[1]),
        rate="pass@k",
        interval=("mean", 1),
    ),
    Metric(
        "debug_rate",
        "debug_rate@k",
        "fraction",
        "(pass@k - pass@1) / (1 - pass@1) over per-task means; None when pass@1 is 1",
        _iterative(lambda s: None if s.under_sampled else debug_rate(s.means[0], s.means[1])),
        rate="debug",
        interval=("ratio", DEBUG),
    ),
    Metric(
        "stagnation_rate",
        "stagnation_rate",
        "fraction",
        "of the trajectories whose loop never ended in success, the share a stagnation detector stopped",
        _iterative(lambda s: ratio(s.nums[STAGNATION], s.dens[STAGNATION])),
        rate="stagnation",
        interval=("ratio", STAGNATION),
    ),
    Metric(
        "dominant_stagnation",
        "dominant_stagnation",
        "detector",
        "the detector that stopped the most stagnated trajectories (ties: the first in DETECTORS)",
        _iterative(lambda s: None if s.dominant < 0 else DETECTORS[s.dominant]),
    ),
    Metric(
        "dominant_stagnation_share",
        "dominant_stagnation_share",
        "fraction",
        "the dominant detector's share of the stagnated trajectories",
        _iterative(_dominant_share),
    ),
    Metric(
        "compile_at_1",
        "compile@1",
        "fraction",
        "the first attempt's build succeeded, per task then over tasks",
        lambda s: s.compile_at_1,
    ),
    Metric(
        "avg_iterations",
        "avg_iterations",
        "iterations",
        "the mean iteration of the first correct attempt, over the trajectories that have one",
        _iterative(lambda s: ratio(s.first_ok_iterations, s.n_first_ok)),
    ),
    Metric(
        "n_stagnated",
        "n_stagnated",
        "trajectories",
        "trajectories a stagnation detector stopped (stagnation_rate's numerator)",
        _iterative(lambda s: int(s.n_stagnated), 0),
    ),
    Metric(
        "n_never_succeeded",
        "n_never_succeeded",
        "trajectories",
        "trajectories whose loop never ended in success (stagnation_rate's denominator)",
        _iterative(lambda s: int(s.dens[STAGNATION]), 0),
    ),
    Metric(
        "degenerate_rate",
        "degenerate_rate",
        "fraction",
        "of the first successes at iteration >= 2, the share slower than the reference beyond timing noise",
        _iterative(lambda s: ratio(s.nums[DEGENERATE], s.dens[DEGENERATE])),
        rate="degenerate",
        interval=("ratio", DEGENERATE),
    ),
    Metric(
        "degenerate_rate_raw",
        "degenerate_rate_raw",
        "fraction",
        "the paper's literal rule: of the first successes at iteration >= 2, the share with speedup < 1.0",
        _iterative(lambda s: ratio(s.nums[DEGENERATE_RAW], s.dens[DEGENERATE_RAW])),
        rate="degenerate_raw",
        interval=("ratio", DEGENERATE_RAW),
    ),
    Metric(
        "degenerate_raw_noise_floor",
        "degenerate_raw_noise_floor",
        "fraction",
        "the part of degenerate_rate_raw timing noise alone gives: half the judged first successes whose "
        "speedup's interval holds 1.0, over the same denominator; None where none has an interval",
        _iterative(
            lambda s: (
                None
                if s.n_fallback >= s.dens[DEGENERATE_RAW]
                else ratio(s.nums[NOISE_FLOOR], s.dens[NOISE_FLOOR])
            )
        ),
        rate="degenerate_raw_floor",
        interval=("ratio", NOISE_FLOOR),
    ),
    Metric(
        "n_degenerate_judged",
        "degenerate_judged",
        "trajectories",
        "first successes at iteration >= 2 with a measured speedup (both degeneration rates' denominator)",
        _iterative(lambda s: int(s.dens[DEGENERATE]), 0),
    ),
    Metric(
        "n_degenerate_fallback",
        "degenerate_fallback_raw",
        "trajectories",
        "of those, the ones without recorded timing samples, judged by the raw rule",
        _iterative(lambda s: int(s.n_fallback), 0),
    ),
    Metric(
        "p_sweep",
        "p_sweep",
        "fraction per p",
        "pass@k with a success counted only at speedup >= p, for each p of P_SWEEP",
        lambda s: {p: s.rate(s.means[2 + j]) for j, p in enumerate(P_SWEEP)},
        lambda d: {f"{p:.1f}": v for p, v in d.items()},
    ),
    Metric(
        "p_sweep_exact",
        "p_sweep_bound",
        "exact or lower_bound per p",
        "whether pass@k(p) is exact or a lower bound (an in-loop gate below p stopped trajectories)",
        lambda s: {p: sweep_exact(s.protocol, p) for p in P_SWEEP},
        lambda d: {f"{p:.1f}": "exact" if exact else "lower_bound" for p, exact in d.items()},
    ),
    Metric(
        "under_sampled",
        "under_sampled",
        "flag",
        "repeated sampling with fewer than K samples of some task (its rates are then None)",
        lambda s: s.under_sampled,
    ),
    Metric(
        "n_self_source",
        "n_self_source",
        "tasks",
        "tasks scored at budget K - 1 because the model under test made their broken start",
        lambda s: s.n_self_source,
    ),
    Metric(
        "n_infra_excluded",
        "n_infra_excluded",
        "attempts",
        "attempts hit by an infrastructure failure, excluded from every rate",
        lambda s: s.n_infra_excluded,
    ),
    Metric(
        "n_flagged_successes",
        "flagged_successes",
        "attempts",
        "attempts that passed the gate with an anti-cheat flag, counted here and in no rate",
        lambda s: s.n_flagged_successes,
    ),
    Metric(
        "n_unstable_successes",
        "unstable_timing_successes",
        "attempts",
        "successes at the gate whose timing's CV stayed above the rule (counted as successes)",
        lambda s: s.n_unstable_successes,
    ),
    Metric(
        "stagnation_counts",
        None,
        "trajectories per detector",
        "per stagnation detector, the trajectories it stopped among those whose loop never ended in success",
        lambda s: {} if s.repeated else {d: int(s.detectors[j]) for j, d in enumerate(DETECTORS)},
    ),
    Metric(
        "repair_speedups",
        None,
        "speedup per trajectory",
        "ascending, per repaired trajectory: the speedup its pass@k(p) is held against p",
        lambda s: s.repair_speedups,
    ),
    Metric(
        "n_repairs_unspeeded",
        None,
        "trajectories",
        "repaired trajectories whose correct attempts have no speedup (they count at p = 0 only)",
        lambda s: s.n_repairs_unspeeded,
    ),
    Metric("n_trajectories", None, "trajectories", "scored trajectories", lambda s: s.n_trajectories),
    Metric(
        "n_attempts",
        None,
        "attempts",
        "scored attempts (infrastructure failures left out)",
        lambda s: s.n_attempts,
    ),
)
