"""Every per-(model, corpus, protocol) metric of docs/metrics.md, vectorised over the attempts table.

Rows are never visited one by one in Python: attempts are reduced to trajectories with sorted
``reduceat`` calls, trajectories to (group, task) cells with ``bincount``, and only then does a loop run,
over groups. Per-task values are kept so bootstrap.py can put intervals on them. Cross-protocol numbers
(swing, Kendall's tau) live in swing.py. This module reads no file and prints nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from beavertui.engine.metrics.self_source import source_model_matches
from beavertui.engine.metrics.table import AttemptsTable, ProtocolKey
from beavertui.engine.session.protocol import DETECTORS

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: The p values of the p sweep (docs/metrics.md).
P_SWEEP: tuple[float, ...] = (0.0, 0.1, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0)


@dataclass(frozen=True)
class TaskCells:
    """Per-task values of one group, the unit the bootstrap resamples."""

    tasks: tuple[str, ...]
    means: F64
    """(tasks, 2 + len(P_SWEEP)): pass@1 and pass@k at the gate, then pass@k at each sweep p."""
    nums: F64
    """(tasks, 5): numerators of debug_rate@k, stagnation_rate, degenerate_rate, degenerate_rate_raw and
    degenerate_raw_noise_floor.
    debug_rate@k's are per-task means (pass@k - pass@1 of the task), so the ratio of the sums is the
    identity (pass@k - pass@1) / (1 - pass@1) over per-task means, resampled with the tasks."""
    dens: F64
    """(tasks, 5): their denominators (debug_rate@k's: 1 - pass@1 of the task)."""


@dataclass(frozen=True)
class GroupMetrics:
    """The metrics of one (model, corpus, protocol) group; rates are fractions, None where undefined."""

    model: str
    protocol: ProtocolKey
    n_tasks: int
    k: int
    pass_at_1: float | None
    pass_at_k: float | None
    debug_rate: float | None
    stagnation_rate: float | None
    dominant_stagnation: str | None
    dominant_stagnation_share: float | None
    degenerate_rate: float | None
    p_sweep: dict[float, float | None]
    under_sampled: bool
    n_trajectories: int
    n_attempts: int
    n_infra_excluded: int
    cells: TaskCells = field(repr=False)
    n_flagged_successes: int = 0
    """Attempts that passed the gate but carried an anti-cheat flag (table column ``flagged``): counted here
    and in no pass rate, so a cheat can never score silently."""
    n_unstable_successes: int = 0
    """Successes at the gate (not flagged) whose speedup comes from a timing above the CV rule (table column
    ``unstable_timing``): they count as successes, as the paper counts recorded speedups; this says how many."""
    corpus: str | None = None
    """The corpus folder's name (None for a table written before the column existed)."""
    degenerate_rate_raw: float | None = None
    """The paper's literal rule: first successes at iteration >= 2 with speedup < 1.0."""
    degenerate_raw_noise_floor: float | None = None
    """The part of degenerate_rate_raw timing noise alone gives: half the judged first successes whose
    speedup's interval holds 1.0 (as fast as the reference within noise, where the raw rule's call is the one
    it makes on the reference timed against itself: below 1.0 half the time), over the same denominator; None
    where no judged first success has an interval (docs/metrics.md)."""
    n_degenerate_judged: int = 0
    """First successes at iteration >= 2 with a measured speedup (both degeneration rates' denominator)."""
    n_degenerate_fallback: int = 0
    """Of those, the ones without recorded timing samples, judged by the raw rule."""
    compile_at_1: float | None = None
    """The release's compilation_rate@1: the share of first attempts whose build succeeded (a build that hit
    its time limit did not), per task then over tasks."""
    avg_iterations: float | None = None
    """The release's avg_iters_to_pass: the mean iteration of the first correct attempt (p = 0) over the
    trajectories that have one; None for repeated sampling."""
    n_stagnated: int = 0
    """Trajectories a stagnation detector stopped (stagnation_rate's numerator)."""
    n_never_succeeded: int = 0
    """Trajectories whose loop never ended in success (stagnation_rate's denominator)."""
    n_self_source: int = 0
    """Tasks scored at budget K - 1 because the model under test made their broken start (self_source): ``k``
    stays the protocol's K, these tasks count K - 1 iterations (repeated: the estimator's k is K - 1)."""
    p_sweep_exact: dict[float, bool] = field(default_factory=dict)
    """Per p of the sweep: True where pass@k(p) is exact, False where it is a lower bound (an in-loop gate
    below p stopped trajectories that might have reached p later)."""
    stagnation_counts: dict[str, int] = field(default_factory=dict)
    """Per stagnation detector (DETECTORS' order): the trajectories it stopped among those whose loop never
    ended in success (the counts ``n_stagnated`` sums and ``dominant_stagnation`` picks from); empty for
    repeated sampling."""
    repair_speedups: F64 = field(default_factory=lambda: np.zeros(0), repr=False, compare=False)
    """Per trajectory with a correct attempt that counts (flagged ones aside), ascending: the speedup its
    pass@k(p) is held against p (its best correct attempt's); those whose correct attempts have no speedup
    are left out and counted in ``n_repairs_unspeeded``."""
    n_repairs_unspeeded: int = 0
    """Trajectories whose correct attempts have no speedup (they count at p = 0 only)."""

    def sort_key(self) -> tuple[str, str, ProtocolKey]:
        return (self.model, self.corpus or "", self.protocol)

    def as_json(self) -> dict[str, Any]:
        """The group object of docs/metrics.md's ``--json`` output (plus ``under_sampled`` and the count of
        attempts hit by an infrastructure failure, excluded from every rate)."""
        return {
            "model": self.model,
            "corpus": self.corpus,
            "protocol": self.protocol.as_dict(),
            "n_tasks": self.n_tasks,
            "k": self.k,
            "pass@1": self.pass_at_1,
            "pass@k": self.pass_at_k,
            "debug_rate@k": self.debug_rate,
            "stagnation_rate": self.stagnation_rate,
            "dominant_stagnation": self.dominant_stagnation,
            "dominant_stagnation_share": self.dominant_stagnation_share,
            "compile@1": self.compile_at_1,
            "avg_iterations": self.avg_iterations,
            "n_stagnated": self.n_stagnated,
            "n_never_succeeded": self.n_never_succeeded,
            "degenerate_rate": self.degenerate_rate,
            "degenerate_rate_raw": self.degenerate_rate_raw,
            "degenerate_raw_noise_floor": self.degenerate_raw_noise_floor,
            "degenerate_judged": self.n_degenerate_judged,
            "degenerate_fallback_raw": self.n_degenerate_fallback,
            "p_sweep": {f"{p:.1f}": v for p, v in self.p_sweep.items()},
            "p_sweep_bound": {
                f"{p:.1f}": "exact" if self.p_sweep_exact.get(p, True) else "lower_bound"
                for p in self.p_sweep
            },
            "under_sampled": self.under_sampled,
            "n_self_source": self.n_self_source,
            "n_infra_excluded": self.n_infra_excluded,
            "flagged_successes": self.n_flagged_successes,
            "unstable_timing_successes": self.n_unstable_successes,
        }


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den > 0 else None


def _unique(key: I64) -> tuple[I64, I64]:
    """Sorted unique values and the inverse index."""
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq.astype(np.int64), inv.reshape(-1).astype(np.int64)


def _combine(*cols: I64) -> I64:
    """Dense codes of the row-wise tuple of non-negative integer columns."""
    key = np.zeros(cols[0].shape[0], np.int64)
    for c in cols:
        span = int(c.max()) + 1 if c.shape[0] else 1
        key = key * span + c
        if int(key.max(initial=0)) > (1 << 40):  # keep products far from overflow
            key = _unique(key)[1]
    return _unique(key)[1]


def _log_factorial(x: F64) -> F64:
    """log(x!) for non-negative integer-valued x, from a cumulative table (exact to rounding)."""
    top = int(x.max(initial=0.0)) + 1
    table = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, top + 1, dtype=np.float64)))))
    return np.asarray(table[np.clip(x, 0, top).astype(np.int64)], dtype=np.float64)


def pass_at_k_estimator(n: I64 | F64 | float, c: I64 | F64 | float, k: I64 | F64 | float) -> F64:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k), elementwise (0 where k <= 0)."""
    n_, c_, k_ = (np.asarray(v, np.float64) for v in (n, c, k))
    n_, c_, k_ = np.broadcast_arrays(n_, c_, k_)
    fail = n_ - c_
    ok = fail >= k_
    # C(f, k) / C(n, k) = f! (n-k)! / ((f-k)! n!)
    log_ratio = (
        _log_factorial(fail)
        + _log_factorial(np.where(ok, n_ - k_, 0.0))
        - _log_factorial(np.where(ok, fail - k_, 0.0))
        - _log_factorial(n_)
    )
    out = np.where(ok, 1.0 - np.exp(log_ratio), 1.0)
    out = np.where(k_ <= 0, 0.0, out)
    return np.asarray(np.clip(out, 0.0, 1.0), dtype=np.float64)


def sweep_exact(proto: ProtocolKey, p: float) -> bool:
    """Whether pass@k(p) is exact under this protocol: always after the run (the paper's gate), for
    repeated sampling and with the whole budget spent; with an in-loop gate only for p up to it."""
    if proto.method == "repeated" or not proto.in_loop or proto.continue_after_pass:
        return True
    return p <= proto.gate + 1e-12


def apply_source_models(table: AttemptsTable, source_models: Mapping[str, str | None]) -> AttemptsTable:
    """Set ``self_source`` from a task -> source model side table (rows of other tasks keep theirs)."""
    models = table.col("model")
    tasks = table.col("task_id")
    # decide per (model label, task label) pair, then broadcast by codes
    hit = np.zeros((len(models.labels) + 1, len(tasks.labels) + 1), np.int8)
    hit[:, :] = -1
    for ti, task in enumerate(tasks.labels):
        if task in source_models:
            for mi, model in enumerate(models.labels):
                hit[mi, ti] = 1 if source_model_matches(model, source_models[task]) else 0
    value = hit[models.codes, tasks.codes]
    return table.with_self_source(np.where(value < 0, table.self_source, value == 1))


def compute_groups(table: AttemptsTable) -> list[GroupMetrics]:
    """All (model, protocol) groups of the table, sorted by model then protocol."""
    n_rows = len(table)
    if n_rows == 0:
        return []
    model = table.col("model")
    pk = table.protocols
    budget = np.array([p.budget for p in pk], np.int64)
    gate = np.array([p.gate for p in pk], np.float64)
    repeated = np.array([p.method == "repeated" for p in pk], np.bool_)

    corpus = table.col("corpus")
    group = _combine(model.codes, corpus.codes + 1, table.protocol)
    n_groups = int(group.max()) + 1
    g_model = np.zeros(n_groups, np.int64)
    g_proto = np.zeros(n_groups, np.int64)
    g_corpus = np.zeros(n_groups, np.int64)
    g_model[group] = model.codes
    g_proto[group] = table.protocol
    g_corpus[group] = corpus.codes

    def corpus_of(g: int) -> str | None:
        c = int(g_corpus[g])
        return corpus.labels[c] if c >= 0 else None

    infra_count = np.bincount(group, weights=table.infra_error, minlength=n_groups)

    keep = ~table.infra_error
    t = table.take(keep) if not keep.all() else table
    grp = group[keep] if not keep.all() else group
    if len(t) == 0:
        return sorted(
            (
                _empty(model.labels[int(g_model[g])], pk[int(g_proto[g])], int(infra_count[g]), corpus_of(g))
                for g in range(n_groups)
            ),
            key=GroupMetrics.sort_key,
        )
    task = t.col("task_id").codes
    traj = _combine(grp, task, t.col("run_id").codes, t.sample)
    proto_row = t.protocol
    rep_row = repeated[proto_row]
    b_row = budget[proto_row] - t.self_source.astype(np.int64)
    counted = rep_row | (t.iteration <= b_row)
    s_all = np.where(t.correct & counted, np.nan_to_num(t.speedup, nan=0.0), -1.0)
    # a flagged success (anti-cheat finding) is never a success; it is counted apart below
    s = np.where(t.flagged, -1.0, s_all)
    flagged_ok = t.flagged & (s_all >= gate[proto_row])
    unstable_ok = t.unstable() & ~t.flagged & (s_all >= gate[proto_row])

    order = np.argsort(traj * (int(t.iteration.max()) + 2) + t.iteration, kind="stable")
    traj_s, s_s, it_s = traj[order], s[order], t.iteration[order]
    starts = np.flatnonzero(np.r_[True, traj_s[1:] != traj_s[:-1]])
    n_traj = starts.shape[0]
    best = np.maximum.reduceat(s_s, starts)
    first = np.full(n_traj, -1.0)
    one = it_s == 1
    first[traj_s[one]] = s_s[one]
    built1 = np.zeros(n_traj, np.bool_)
    built1[traj_s[one]] = t.built()[order][one]
    stop = np.maximum.reduceat(t.col("stop_reason").codes[order], starts)
    det_of_label = np.array(
        [DETECTORS.index(lbl) if lbl in DETECTORS else -1 for lbl in t.col("stop_reason").labels] + [-1],
        np.int64,
    )
    det = det_of_label[stop]  # code -1 indexes the trailing -1
    ok0 = np.flatnonzero(s_s >= 0)
    firsts = ok0[np.r_[True, traj_s[ok0][1:] != traj_s[ok0][:-1]]] if ok0.size else ok0
    first_ok_iter = np.zeros(n_traj, np.int64)
    first_ok_speed = np.full(n_traj, np.nan)
    first_ok_hi = np.full(n_traj, np.nan)
    first_ok_lo = np.full(n_traj, np.nan)
    first_ok_iter[traj_s[firsts]] = it_s[firsts]
    speed_s = t.speedup[order]
    first_ok_speed[traj_s[firsts]] = speed_s[firsts]
    first_ok_hi[traj_s[firsts]] = t.interval("speedup_hi")[order][firsts]
    first_ok_lo[traj_s[firsts]] = t.interval("speedup_lo")[order][firsts]

    # the speedup each trajectory's pass@k(p) holds against p, NaN where its correct attempts have none
    best_speed = np.fmax.reduceat(np.where(s_s >= 0, speed_s, np.nan), starts)
    tr_group = grp[order][starts]
    tr_task = task[order][starts]
    tr_self = np.maximum.reduceat(t.self_source[order].astype(np.int64), starts)
    tr_gate = gate[g_proto[tr_group]]

    cell = _combine(tr_group, tr_task)
    n_cells = int(cell.max()) + 1
    cell_group = np.zeros(n_cells, np.int64)
    cell_task = np.zeros(n_cells, np.int64)
    cell_group[cell] = tr_group
    cell_task[cell] = tr_task
    n_samp = np.bincount(cell, minlength=n_cells).astype(np.float64)
    cell_self = np.bincount(cell, weights=tr_self, minlength=n_cells) > 0

    def per_cell(x: npt.NDArray[Any]) -> F64:
        return np.bincount(cell, weights=x.astype(np.float64), minlength=n_cells).astype(np.float64)

    ps = np.array(P_SWEEP)
    ok_k = np.column_stack([best >= tr_gate] + [best >= p for p in ps])  # (traj, 1 + P)
    ok_1 = first >= tr_gate
    sum_k = np.column_stack([per_cell(ok_k[:, j]) for j in range(ok_k.shape[1])])
    sum_1 = per_cell(ok_1)
    c_rep = np.column_stack([per_cell(best >= tr_gate)] + [per_cell(best >= p) for p in ps])

    # iterative: share of a task's trajectories; repeated: the unbiased estimator with k = b
    cell_rep = repeated[g_proto[cell_group]]
    k_cell = budget[g_proto[cell_group]] - cell_self.astype(np.int64)
    est = pass_at_k_estimator(n_samp[:, None], c_rep, k_cell[:, None])
    est1 = pass_at_k_estimator(n_samp, c_rep[:, 0], np.ones(n_cells))
    mean_k = np.where(cell_rep[:, None], est, sum_k / n_samp[:, None])
    mean_1 = np.where(cell_rep, est1, sum_1 / n_samp)

    # the paper's failure stagnation rate: among trajectories whose loop never ended in success (after the
    # run: no correct attempt at all, as a correct-but-slow one ended "passed" and can never stagnate; in the
    # loop: no attempt met the gate), the share a detector stopped
    in_loop = np.array([p.in_loop and p.method != "repeated" for p in pk], np.bool_)
    notsucc = best < np.where(in_loop[g_proto[tr_group]], tr_gate, 0.0)
    stag = notsucc & (det >= 0)
    later = first_ok_iter >= 2
    degen_den = later & ~np.isnan(first_ok_speed)
    no_interval = np.isnan(first_ok_hi)
    raw_slow = first_ok_speed < 1.0
    degen_num = degen_den & np.where(no_interval, raw_slow, first_ok_hi < 1.0)
    degen_raw = degen_den & raw_slow
    fallback = per_cell(degen_den & no_interval)
    # the raw rule's noise floor: a first success whose interval holds 1.0 is the reference against itself
    # within noise, called below 1.0 half the time (NaN bounds compare False: no interval, not counted)
    within = degen_den & (first_ok_lo <= 1.0) & (first_ok_hi >= 1.0)
    nums = np.column_stack(
        [
            mean_k[:, 0] - mean_1,
            per_cell(stag),
            per_cell(degen_num),
            per_cell(degen_raw),
            0.5 * per_cell(within),
        ]
    )
    dens = np.column_stack(
        [1.0 - mean_1, per_cell(notsucc), per_cell(degen_den), per_cell(degen_den), per_cell(degen_den)]
    )
    det_counts = np.column_stack([per_cell(stag & (det == d)) for d in range(len(DETECTORS))])

    compile_cell = per_cell(built1) / n_samp
    tr_ok_iter = first_ok_iter.astype(np.float64)
    iters_sum = np.bincount(tr_group, weights=tr_ok_iter, minlength=n_groups)
    iters_n = np.bincount(tr_group, weights=first_ok_iter > 0, minlength=n_groups)
    rows_per_group = np.bincount(grp, minlength=n_groups)
    flagged_per_group = np.bincount(grp, weights=flagged_ok, minlength=n_groups)
    unstable_per_group = np.bincount(grp, weights=unstable_ok, minlength=n_groups)
    traj_per_group = np.bincount(tr_group, minlength=n_groups)
    repaired = best >= 0
    speeded = np.flatnonzero(repaired & ~np.isnan(best_speed))
    speeded = speeded[np.argsort(tr_group[speeded], kind="stable")]  # by group, a slice each
    speed_bounds = np.searchsorted(tr_group[speeded], np.arange(n_groups + 1))
    unspeeded_per_group = np.bincount(tr_group, weights=repaired & np.isnan(best_speed), minlength=n_groups)
    cells_by_group = np.argsort(cell_group, kind="stable")
    bounds = np.searchsorted(cell_group[cells_by_group], np.arange(n_groups + 1))
    tasks = t.col("task_id").labels
    out: list[GroupMetrics] = []
    for g in range(n_groups):
        idx = cells_by_group[bounds[g] : bounds[g + 1]]
        if idx.size == 0:
            continue
        proto = pk[int(g_proto[g])]
        rep = proto.method == "repeated"
        under = bool(rep and (n_samp[idx] < proto.budget).any())
        means = np.column_stack([mean_1[idx], mean_k[idx]])
        num, den = nums[idx].sum(axis=0), dens[idx].sum(axis=0)
        dc = det_counts[idx].sum(axis=0)
        stagnated = float(dc.sum())
        dom = int(np.argmax(dc)) if stagnated > 0 else -1  # argmax keeps the first of ties
        avg = means.mean(axis=0)

        def val(x: float, under: bool = under) -> float | None:
            return None if under else float(x)

        out.append(
            GroupMetrics(
                corpus=corpus_of(g),
                degenerate_rate_raw=None if rep else _ratio(num[3], den[3]),
                degenerate_raw_noise_floor=(
                    None if rep or fallback[idx].sum() >= den[3] else _ratio(num[4], den[4])
                ),
                n_degenerate_judged=0 if rep else int(den[2]),
                n_degenerate_fallback=0 if rep else int(fallback[idx].sum()),
                p_sweep_exact={p: sweep_exact(proto, p) for p in P_SWEEP},
                model=model.labels[int(g_model[g])],
                protocol=proto,
                n_tasks=int(idx.size),
                k=proto.budget,
                pass_at_1=val(avg[0]),
                pass_at_k=val(avg[1]),
                debug_rate=None if rep or under else _debug(avg[0], avg[1]),
                stagnation_rate=None if rep else _ratio(num[1], den[1]),
                dominant_stagnation=None if rep or dom < 0 else DETECTORS[dom],
                dominant_stagnation_share=None if rep or dom < 0 else float(dc[dom] / stagnated),
                degenerate_rate=None if rep else _ratio(num[2], den[2]),
                compile_at_1=float(compile_cell[idx].mean()),
                avg_iterations=None if rep else _ratio(iters_sum[g], iters_n[g]),
                n_stagnated=0 if rep else int(stagnated),
                n_never_succeeded=0 if rep else int(den[1]),
                n_self_source=int(cell_self[idx].sum()),
                p_sweep={p: val(avg[2 + j]) for j, p in enumerate(P_SWEEP)},
                stagnation_counts={} if rep else {d: int(dc[j]) for j, d in enumerate(DETECTORS)},
                repair_speedups=np.sort(best_speed[speeded[speed_bounds[g] : speed_bounds[g + 1]]]),
                n_repairs_unspeeded=int(unspeeded_per_group[g]),
                under_sampled=under,
                n_trajectories=int(traj_per_group[g]),
                n_attempts=int(rows_per_group[g]),
                n_infra_excluded=int(infra_count[g]),
                n_flagged_successes=int(flagged_per_group[g]),
                n_unstable_successes=int(unstable_per_group[g]),
                cells=TaskCells(
                    tasks=tuple(tasks[int(i)] for i in cell_task[idx]),
                    means=means,
                    nums=nums[idx],
                    dens=dens[idx],
                ),
            )
        )
    # groups whose every attempt was an infrastructure failure still appear, with nothing scored
    seen = {o.sort_key() for o in out}
    for g in np.flatnonzero(infra_count > 0).tolist():
        m, c, pr = model.labels[int(g_model[g])], corpus_of(g), pk[int(g_proto[g])]
        if (m, c or "", pr) not in seen:
            out.append(_empty(m, pr, int(infra_count[g]), c))
    out.sort(key=GroupMetrics.sort_key)
    return out


def _debug(pass_1: float, pass_k: float) -> float | None:
    """debug_rate@k = (pass@k - pass@1) / (1 - pass@1) over per-task means; None when pass@1 is 1."""
    if 1.0 - pass_1 <= 1e-12:
        return None
    return float((pass_k - pass_1) / (1.0 - pass_1))


def _empty(model: str, proto: ProtocolKey, infra: int, corpus: str | None = None) -> GroupMetrics:
    return GroupMetrics(
        corpus=corpus,
        p_sweep_exact={p: sweep_exact(proto, p) for p in P_SWEEP},
        model=model,
        protocol=proto,
        n_tasks=0,
        k=proto.budget,
        pass_at_1=None,
        pass_at_k=None,
        debug_rate=None,
        stagnation_rate=None,
        dominant_stagnation=None,
        dominant_stagnation_share=None,
        degenerate_rate=None,
        p_sweep=dict.fromkeys(P_SWEEP),
        under_sampled=False,
        n_trajectories=0,
        n_attempts=0,
        n_infra_excluded=infra,
        cells=TaskCells((), np.zeros((0, 2 + len(P_SWEEP))), np.zeros((0, 5)), np.zeros((0, 5))),
    )
