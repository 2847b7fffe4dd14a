"""Every per-(model, protocol) metric of shared/spec/metrics.md, vectorised over the attempts table.

Rows are never visited one by one in Python: attempts are reduced to trajectories with sorted
``reduceat`` calls, trajectories to (group, task) cells with ``bincount``, and only then does a loop run,
over groups. Per-task values are kept so bootstrap.py can put intervals on them. Cross-protocol numbers
(swing, Kendall's tau) live in across.py. This module reads no file and prints nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from beavertui.engine.metrics.table import AttemptsTable, ProtocolKey
from beavertui.engine.session.protocol import DETECTORS

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: The p values of the p sweep (metrics.md).
P_SWEEP: tuple[float, ...] = (0.0, 0.1, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0)


@dataclass(frozen=True)
class TaskCells:
    """Per-task values of one group, the unit the bootstrap resamples."""

    tasks: tuple[str, ...]
    means: F64
    """(tasks, 2 + len(P_SWEEP)): pass@1 and pass@k at the gate, then pass@k at each sweep p."""
    nums: F64
    """(tasks, 3): numerators of debug_rate@k, stagnation_rate, degenerate_rate."""
    dens: F64
    """(tasks, 3): their denominators."""


@dataclass(frozen=True)
class GroupMetrics:
    """The metrics of one (model, protocol) group; rates are fractions, None where undefined."""

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

    def as_json(self) -> dict[str, Any]:
        """The group object of metrics.md's ``--json`` output (plus ``under_sampled`` and the count of
        attempts hit by an infrastructure failure, excluded from every rate)."""
        return {
            "model": self.model,
            "protocol": self.protocol.as_dict(),
            "n_tasks": self.n_tasks,
            "k": self.k,
            "pass@1": self.pass_at_1,
            "pass@k": self.pass_at_k,
            "debug_rate@k": self.debug_rate,
            "stagnation_rate": self.stagnation_rate,
            "dominant_stagnation": self.dominant_stagnation,
            "dominant_stagnation_share": self.dominant_stagnation_share,
            "degenerate_rate": self.degenerate_rate,
            "p_sweep": {f"{p:.1f}": v for p, v in self.p_sweep.items()},
            "under_sampled": self.under_sampled,
            "n_infra_excluded": self.n_infra_excluded,
            "flagged_successes": self.n_flagged_successes,
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


def source_model_matches(model: str, source: str | None) -> bool:
    """Whether a task's source model is the model under test (exact, or the same name after the last '/')."""
    if not source:
        return False
    if model == source:
        return True
    return model.rsplit("/", 1)[-1].lower() == source.rsplit("/", 1)[-1].lower()


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

    group = _combine(model.codes, table.protocol)
    n_groups = int(group.max()) + 1
    g_model = np.zeros(n_groups, np.int64)
    g_proto = np.zeros(n_groups, np.int64)
    g_model[group] = model.codes
    g_proto[group] = table.protocol
    infra_count = np.bincount(group, weights=table.infra_error, minlength=n_groups)

    keep = ~table.infra_error
    t = table.take(keep) if not keep.all() else table
    grp = group[keep] if not keep.all() else group
    if len(t) == 0:
        return sorted(
            (
                _empty(model.labels[int(g_model[g])], pk[int(g_proto[g])], int(infra_count[g]))
                for g in range(n_groups)
            ),
            key=lambda m: (m.model, m.protocol),
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

    order = np.argsort(traj * (int(t.iteration.max()) + 2) + t.iteration, kind="stable")
    traj_s, s_s, it_s = traj[order], s[order], t.iteration[order]
    starts = np.flatnonzero(np.r_[True, traj_s[1:] != traj_s[:-1]])
    n_traj = starts.shape[0]
    best = np.maximum.reduceat(s_s, starts)
    first = np.full(n_traj, -1.0)
    one = it_s == 1
    first[traj_s[one]] = s_s[one]
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
    first_ok_iter[traj_s[firsts]] = it_s[firsts]
    first_ok_speed[traj_s[firsts]] = t.speedup[order][firsts]

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

    fail1 = ~ok_1
    notsucc = ~ok_k[:, 0]
    stag = notsucc & (det >= 0)
    later = first_ok_iter >= 2
    degen_den = later & ~np.isnan(first_ok_speed)
    degen_num = degen_den & (first_ok_speed < 1.0)
    nums = np.column_stack([per_cell(fail1 & ok_k[:, 0]), per_cell(stag), per_cell(degen_num)])
    dens = np.column_stack([per_cell(fail1), per_cell(notsucc), per_cell(degen_den)])
    det_counts = np.column_stack([per_cell(stag & (det == d)) for d in range(len(DETECTORS))])

    rows_per_group = np.bincount(grp, minlength=n_groups)
    flagged_per_group = np.bincount(grp, weights=flagged_ok, minlength=n_groups)
    traj_per_group = np.bincount(tr_group, minlength=n_groups)
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
                model=model.labels[int(g_model[g])],
                protocol=proto,
                n_tasks=int(idx.size),
                k=proto.budget,
                pass_at_1=val(avg[0]),
                pass_at_k=val(avg[1]),
                debug_rate=None if rep else _ratio(num[0], den[0]),
                stagnation_rate=None if rep else _ratio(num[1], den[1]),
                dominant_stagnation=None if rep or dom < 0 else DETECTORS[dom],
                dominant_stagnation_share=None if rep or dom < 0 else float(dc[dom] / stagnated),
                degenerate_rate=None if rep else _ratio(num[2], den[2]),
                p_sweep={p: val(avg[2 + j]) for j, p in enumerate(P_SWEEP)},
                under_sampled=under,
                n_trajectories=int(traj_per_group[g]),
                n_attempts=int(rows_per_group[g]),
                n_infra_excluded=int(infra_count[g]),
                n_flagged_successes=int(flagged_per_group[g]),
                cells=TaskCells(
                    tasks=tuple(tasks[int(i)] for i in cell_task[idx]),
                    means=means,
                    nums=nums[idx],
                    dens=dens[idx],
                ),
            )
        )
    # groups whose every attempt was an infrastructure failure still appear, with nothing scored
    seen = {(o.model, o.protocol) for o in out}
    for g in np.flatnonzero(infra_count > 0).tolist():
        key = (model.labels[int(g_model[g])], pk[int(g_proto[g])])
        if key not in seen:
            out.append(_empty(key[0], key[1], int(infra_count[g])))
    out.sort(key=lambda m: (m.model, m.protocol))
    return out


def _empty(model: str, proto: ProtocolKey, infra: int) -> GroupMetrics:
    return GroupMetrics(
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
        cells=TaskCells((), np.zeros((0, 2 + len(P_SWEEP))), np.zeros((0, 3)), np.zeros((0, 3))),
    )
