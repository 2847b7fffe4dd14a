"""Every per-(model, corpus, protocol) metric of docs/metrics.md, vectorised over the attempts table.

Rows are never visited one by one in Python: attempts are reduced to trajectories with sorted
``reduceat`` calls, trajectories to (group, task) cells with ``bincount``, and only then does a loop run,
over groups. Per-task values are kept so bootstrap.py can put intervals on them. Cross-protocol numbers
(swing, Kendall's tau) live in swing.py. This module reads no file and prints nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from beavertui.engine.metrics.registry import METRICS, GroupSums, sweep_exact
from beavertui.engine.metrics.registry import P_SWEEP as P_SWEEP  # the sweep's p values, read from here too
from beavertui.engine.metrics.self_source import source_model_matches
from beavertui.engine.metrics.table import AttemptsTable, ProtocolKey
from beavertui.engine.session.protocol import DETECTORS

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


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
            **{m.key: m.json(getattr(self, m.name)) for m in METRICS if m.key is not None},
        }


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


@dataclass(frozen=True)
class _Groups:
    """The table's (model, corpus, protocol) groups: each row's group code and each group's labels."""

    table: AttemptsTable
    code: I64
    model: I64
    proto: I64
    corpus: I64
    infra: F64
    """Attempts hit by an infrastructure failure, per group."""
    budget: I64
    """Per protocol of the table: K, the gate, whether it samples repeatedly, whether its gate is in the loop."""
    gate: F64
    repeated: npt.NDArray[np.bool_]
    in_loop: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, table: AttemptsTable) -> _Groups:
        model, corpus, pk = table.col("model"), table.col("corpus"), table.protocols
        code = _combine(model.codes, corpus.codes + 1, table.protocol)
        n = int(code.max()) + 1
        g_model, g_proto, g_corpus = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        g_model[code] = model.codes
        g_proto[code] = table.protocol
        g_corpus[code] = corpus.codes
        return cls(
            table=table,
            code=code,
            model=g_model,
            proto=g_proto,
            corpus=g_corpus,
            infra=np.bincount(code, weights=table.infra_error, minlength=n).astype(np.float64),
            budget=np.array([p.budget for p in pk], np.int64),
            gate=np.array([p.gate for p in pk], np.float64),
            repeated=np.array([p.method == "repeated" for p in pk], np.bool_),
            in_loop=np.array([p.in_loop and p.method != "repeated" for p in pk], np.bool_),
        )

    @property
    def n(self) -> int:
        return int(self.model.shape[0])

    def model_of(self, g: int) -> str:
        return self.table.col("model").labels[int(self.model[g])]

    def protocol_of(self, g: int) -> ProtocolKey:
        return self.table.protocols[int(self.proto[g])]

    def corpus_of(self, g: int) -> str | None:
        c = int(self.corpus[g])
        return self.table.col("corpus").labels[c] if c >= 0 else None


@dataclass(frozen=True)
class _Trajectories:
    """The scored attempts (infrastructure failures left out) reduced to one row per trajectory."""

    group: I64
    task: I64
    self_source: I64
    gate: F64
    best: F64
    """Best speedup of a counted, correct, unflagged attempt; -1 if none."""
    first: F64
    """The iteration-1 attempt's speedup on the same terms."""
    built1: npt.NDArray[np.bool_]
    detector: I64
    """Index in DETECTORS of the detector that stopped it, -1 if none did."""
    first_ok_iter: I64
    """Iteration of the first correct attempt (0 if none), its speedup and the top of its interval."""
    first_ok_speed: F64
    first_ok_hi: F64
    first_ok_lo: F64
    best_speed: F64
    """The speedup its pass@k(p) holds against p (its best correct attempt's), NaN where its correct attempts
    have none."""
    flagged_ok: npt.NDArray[np.bool_]
    """Per attempt: passed the gate with an anti-cheat flag; a success with unstable timing."""
    unstable_ok: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, t: AttemptsTable, grp: I64, groups: _Groups) -> _Trajectories:
        task = t.col("task_id").codes
        traj = _combine(grp, task, t.col("run_id").codes, t.sample)
        proto_row = t.protocol
        b_row = groups.budget[proto_row] - t.self_source.astype(np.int64)
        counted = groups.repeated[proto_row] | (t.iteration <= b_row)
        s_all = np.where(t.correct & counted, np.nan_to_num(t.speedup, nan=0.0), -1.0)
        # a flagged success (anti-cheat finding) is never a success; it is counted apart below
        s = np.where(t.flagged, -1.0, s_all)
        row_gate = groups.gate[proto_row]

        order = np.argsort(traj * (int(t.iteration.max()) + 2) + t.iteration, kind="stable")
        traj_s, s_s, it_s = traj[order], s[order], t.iteration[order]
        starts = np.flatnonzero(np.r_[True, traj_s[1:] != traj_s[:-1]])
        n_traj = starts.shape[0]
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
        tr_group = grp[order][starts]
        return cls(
            group=tr_group,
            task=task[order][starts],
            self_source=np.maximum.reduceat(t.self_source[order].astype(np.int64), starts),
            gate=groups.gate[groups.proto[tr_group]],
            best=np.maximum.reduceat(s_s, starts),
            first=first,
            built1=built1,
            detector=det_of_label[stop],  # code -1 indexes the trailing -1
            first_ok_iter=first_ok_iter,
            first_ok_speed=first_ok_speed,
            first_ok_hi=first_ok_hi,
            first_ok_lo=first_ok_lo,
            best_speed=np.fmax.reduceat(np.where(s_s >= 0, speed_s, np.nan), starts),
            flagged_ok=t.flagged & (s_all >= row_gate),
            unstable_ok=t.unstable() & ~t.flagged & (s_all >= row_gate),
        )


@dataclass(frozen=True)
class _Cells:
    """The trajectories reduced to (group, task) cells: per-task means and the ratios' per-task sums."""

    group: I64
    task: I64
    n_samples: F64
    self_source: npt.NDArray[np.bool_]
    mean_1: F64
    mean_k: F64
    """(cells, 1 + len(P_SWEEP)): pass@k at the gate, then at each p."""
    nums: F64
    dens: F64
    detectors: F64
    """(cells, len(DETECTORS)): stagnated trajectories per detector."""
    fallback: F64
    compile_1: F64

    @classmethod
    def of(cls, tr: _Trajectories, groups: _Groups) -> _Cells:
        cell = _combine(tr.group, tr.task)
        n_cells = int(cell.max()) + 1
        cell_group = np.zeros(n_cells, np.int64)
        cell_task = np.zeros(n_cells, np.int64)
        cell_group[cell] = tr.group
        cell_task[cell] = tr.task
        n_samp = np.bincount(cell, minlength=n_cells).astype(np.float64)
        cell_self = np.bincount(cell, weights=tr.self_source, minlength=n_cells) > 0

        def per_cell(x: npt.NDArray[Any]) -> F64:
            return np.bincount(cell, weights=x.astype(np.float64), minlength=n_cells).astype(np.float64)

        best, gate = tr.best, tr.gate
        ps = np.array(P_SWEEP)
        ok_k = np.column_stack([best >= gate] + [best >= p for p in ps])  # (traj, 1 + P)
        sum_k = np.column_stack([per_cell(ok_k[:, j]) for j in range(ok_k.shape[1])])
        sum_1 = per_cell(tr.first >= gate)
        c_rep = np.column_stack([per_cell(best >= gate)] + [per_cell(best >= p) for p in ps])

        # iterative: share of a task's trajectories; repeated: the unbiased estimator with k = b
        cell_proto = groups.proto[cell_group]
        cell_rep = groups.repeated[cell_proto]
        k_cell = groups.budget[cell_proto] - cell_self.astype(np.int64)
        est = pass_at_k_estimator(n_samp[:, None], c_rep, k_cell[:, None])
        est1 = pass_at_k_estimator(n_samp, c_rep[:, 0], np.ones(n_cells))
        mean_k = np.where(cell_rep[:, None], est, sum_k / n_samp[:, None])
        mean_1 = np.where(cell_rep, est1, sum_1 / n_samp)

        # the paper's failure stagnation rate: among trajectories whose loop never ended in success (after the
        # run: no correct attempt at all, as a correct-but-slow one ended "passed" and can never stagnate; in the
        # loop: no attempt met the gate), the share a detector stopped
        notsucc = best < np.where(groups.in_loop[groups.proto[tr.group]], gate, 0.0)
        det = tr.detector
        stag = notsucc & (det >= 0)
        degen_den = (tr.first_ok_iter >= 2) & ~np.isnan(tr.first_ok_speed)
        no_interval = np.isnan(tr.first_ok_hi)
        raw_slow = tr.first_ok_speed < 1.0
        degen_num = degen_den & np.where(no_interval, raw_slow, tr.first_ok_hi < 1.0)
        degen_raw = degen_den & raw_slow
        # the raw rule's noise floor: a first success whose interval holds 1.0 is the reference against itself
        # within noise, called below 1.0 half the time (NaN bounds compare False: no interval, not counted)
        within = degen_den & (tr.first_ok_lo <= 1.0) & (tr.first_ok_hi >= 1.0)
        return cls(
            group=cell_group,
            task=cell_task,
            n_samples=n_samp,
            self_source=cell_self,
            mean_1=mean_1,
            mean_k=mean_k,
            nums=np.column_stack(
                [
                    mean_k[:, 0] - mean_1,
                    per_cell(stag),
                    per_cell(degen_num),
                    per_cell(degen_raw),
                    0.5 * per_cell(within),
                ]
            ),
            dens=np.column_stack(
                [
                    1.0 - mean_1,
                    per_cell(notsucc),
                    per_cell(degen_den),
                    per_cell(degen_den),
                    per_cell(degen_den),
                ]
            ),
            detectors=np.column_stack([per_cell(stag & (det == d)) for d in range(len(DETECTORS))]),
            fallback=per_cell(degen_den & no_interval),
            compile_1=per_cell(tr.built1) / n_samp,
        )


def _group_sums(
    t: AttemptsTable, grp: I64, tr: _Trajectories, cells: _Cells, groups: _Groups
) -> Iterator[tuple[int, TaskCells, GroupSums]]:
    """(group code, its per-task values, its GroupSums) of every group with a scored attempt."""
    n = groups.n
    iters_sum = np.bincount(tr.group, weights=tr.first_ok_iter.astype(np.float64), minlength=n)
    iters_n = np.bincount(tr.group, weights=tr.first_ok_iter > 0, minlength=n)
    rows = np.bincount(grp, minlength=n)
    flagged = np.bincount(grp, weights=tr.flagged_ok, minlength=n)
    unstable = np.bincount(grp, weights=tr.unstable_ok, minlength=n)
    trajectories = np.bincount(tr.group, minlength=n)
    repaired = tr.best >= 0
    speeded = np.flatnonzero(repaired & ~np.isnan(tr.best_speed))
    speeded = speeded[np.argsort(tr.group[speeded], kind="stable")]  # by group, a slice each
    speed_bounds = np.searchsorted(tr.group[speeded], np.arange(n + 1))
    unspeeded = np.bincount(tr.group, weights=repaired & np.isnan(tr.best_speed), minlength=n)
    by_group = np.argsort(cells.group, kind="stable")
    bounds = np.searchsorted(cells.group[by_group], np.arange(n + 1))
    tasks = t.col("task_id").labels
    for g in range(n):
        idx = by_group[bounds[g] : bounds[g + 1]]
        if idx.size == 0:
            continue
        proto = groups.protocol_of(g)
        under = bool(proto.method == "repeated" and (cells.n_samples[idx] < proto.budget).any())
        means = np.column_stack([cells.mean_1[idx], cells.mean_k[idx]])
        yield (
            g,
            TaskCells(tuple(tasks[int(i)] for i in cells.task[idx]), means, cells.nums[idx], cells.dens[idx]),
            GroupSums(
                protocol=proto,
                n_tasks=int(idx.size),
                under_sampled=under,
                means=means.mean(axis=0),
                nums=cells.nums[idx].sum(axis=0),
                dens=cells.dens[idx].sum(axis=0),
                detectors=cells.detectors[idx].sum(axis=0),
                n_fallback=float(cells.fallback[idx].sum()),
                compile_at_1=float(cells.compile_1[idx].mean()),
                first_ok_iterations=iters_sum[g],
                n_first_ok=iters_n[g],
                n_self_source=int(cells.self_source[idx].sum()),
                n_trajectories=int(trajectories[g]),
                n_attempts=int(rows[g]),
                n_infra_excluded=int(groups.infra[g]),
                n_flagged_successes=int(flagged[g]),
                n_unstable_successes=int(unstable[g]),
                repair_speedups=np.sort(tr.best_speed[speeded[speed_bounds[g] : speed_bounds[g + 1]]]),
                n_repairs_unspeeded=int(unspeeded[g]),
            ),
        )


def compute_groups(table: AttemptsTable) -> list[GroupMetrics]:
    """All (model, protocol) groups of the table, sorted by model then protocol."""
    if len(table) == 0:
        return []
    groups = _Groups.of(table)
    keep = ~table.infra_error
    t = table.take(keep) if not keep.all() else table
    grp = groups.code[keep] if not keep.all() else groups.code
    out: list[GroupMetrics] = []
    if len(t):
        tr = _Trajectories.of(t, grp, groups)
        cells = _Cells.of(tr, groups)
        for g, cell, sums in _group_sums(t, grp, tr, cells, groups):
            fields = {m.name: m.value(sums) for m in METRICS}
            out.append(
                GroupMetrics(
                    model=groups.model_of(g),
                    protocol=sums.protocol,
                    corpus=groups.corpus_of(g),
                    cells=cell,
                    **fields,
                )
            )
    # groups whose every attempt was an infrastructure failure still appear, with nothing scored
    seen = {o.sort_key() for o in out}
    for g in np.flatnonzero(groups.infra > 0).tolist():
        m, c, pr = groups.model_of(g), groups.corpus_of(g), groups.protocol_of(g)
        if (m, c or "", pr) not in seen:
            out.append(_empty(m, pr, int(groups.infra[g]), c))
    out.sort(key=GroupMetrics.sort_key)
    return out


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
