"""The analysis of recorded attempts, in the shapes the attempts table, the metrics and the TUI consume.

Edit precision, bug recall and code degeneration need the code of an attempt, which the attempts table
does not carry; ``attempt_columns`` computes them once per attempt from the session (for the attempts
builder), ``summarize`` aggregates those columns per (model, protocol) group next to pass@k (``run_summary`` does
both straight from a run directory's session files), and
``attempt_lines`` / ``attribution_rows`` give the TUI plain text to show. No rendering library here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from beavertui.engine.analysis.attribution import Attribution
from beavertui.engine.analysis.degeneration import Degeneration, compare, runtime_geometry
from beavertui.engine.analysis.edits import EditScore, edit_score
from beavertui.engine.corpus.fixes import FixTarget, target_for
from beavertui.engine.metrics.groups import GroupKey, group_key
from beavertui.engine.session.events import TaskRef, model_identity
from beavertui.engine.session.state import AttemptState

if TYPE_CHECKING:
    from beavertui.engine.metrics.attempts import RunSession

#: Columns ``attempt_columns`` adds to an attempts-table row (null unless the attempt was correct).
COLUMNS: tuple[str, ...] = ("edit_precision", "bug_recall", "code_degenerate", "lost_features")


@dataclass(frozen=True)
class AttemptAnalysis:
    """Edit and degeneration analysis of one correct attempt."""

    iteration: int
    edit: EditScore | None
    """Scored against the task's verified minimal fix; None when unscored (``unscored`` says why)."""
    degeneration: Degeneration
    unscored: str | None = None
    """Why the edit is unscored: the task has no verified minimal fix (None when scored)."""
    fix_origin: str | None = None
    """Where the minimal fix it was scored against comes from (FixTarget.origin), when scored."""


def analyse(task: TaskRef, attempt: AttemptState, fix: FixTarget | None = None) -> AttemptAnalysis | None:
    """Analyse an attempt whose candidate the harness judged correct; None for any other attempt.

    Edit precision and bug recall compare the repair's edit with the broken start -> minimal fix edit:
    ``fix`` (default: the task's verified minimal fix, found from its corpus). A task without one leaves
    the edit unscored; it is never scored against the reference."""
    cand = attempt.candidate
    verdict = attempt.verdict
    if cand is None or cand.code is None or verdict is None or not verdict.correct:
        return None
    if not task.broken_start:  # an imported session whose task texts were not found: nothing to compare
        return None
    if fix is None:
        fix = target_for(task.corpus, task.id, task.broken_start)
    edit = edit_score(task.broken_start, cand.code, fix.source) if fix.source is not None else None
    run_log = attempt.run.result.log if attempt.run is not None else ""
    runtime = runtime_geometry(run_log) or None
    deg = compare(cand.code, task.broken_start, task.reference, candidate_runtime=runtime)
    return AttemptAnalysis(
        attempt.iteration,
        edit,
        deg,
        None if edit is not None else fix.reason,
        fix.origin if edit is not None else None,
    )


def attempt_columns(task: TaskRef, attempt: AttemptState, fix: FixTarget | None = None) -> dict[str, object]:
    """The four analysis columns of one attempts-table row (all None unless the attempt was correct).

    ``lost_features`` is the lost feature names joined with ``+`` ('' when none were lost); edit precision
    and bug recall are None too when the task has no verified minimal fix (unscored).
    """
    return _columns(analyse(task, attempt, fix))


def _columns(a: AttemptAnalysis | None) -> dict[str, object]:
    if a is None:
        return dict.fromkeys(COLUMNS)
    return {
        "edit_precision": a.edit.precision if a.edit else None,
        "bug_recall": a.edit.recall if a.edit else None,
        "code_degenerate": a.degeneration.degenerate,
        "lost_features": "+".join(a.degeneration.lost),
    }


def summarize(
    trajectory: ArrayLike,
    iteration: ArrayLike,
    correct: ArrayLike,
    edit_precision: ArrayLike,
    bug_recall: ArrayLike,
    code_degenerate: ArrayLike,
) -> dict[str, float | int | None]:
    """Per-group analysis metrics over counted attempts (one array element per attempt, nulls as NaN).

    Each trajectory is scored at its first correct attempt (success at p = 0):
    ``edit_precision`` and ``bug_recall`` are the means over those attempts (NaN left out);
    ``code_degenerate_rate`` is, like docs/metrics.md's ``degenerate_rate``, taken among trajectories whose
    first success comes at iteration >= 2: the share whose first success is code-degenerate.
    """
    nums, dens, analysed = first_success_sums(
        trajectory, iteration, correct, edit_precision, bug_recall, code_degenerate
    )
    values = [float(n / d) if d > 0 else None for n, d in zip(nums, dens, strict=True)]
    return {
        "edit_precision": values[0],
        "bug_recall": values[1],
        "code_degenerate_rate": values[2],
        "analysed_repairs": analysed,
    }


def first_success_sums(
    trajectory: ArrayLike,
    iteration: ArrayLike,
    correct: ArrayLike,
    edit_precision: ArrayLike,
    bug_recall: ArrayLike,
    code_degenerate: ArrayLike,
) -> tuple[list[float], list[float], int]:
    """``summarize``'s numerators and denominators (precision, recall, code-degenerate rate) and the
    number of trajectories with a correct attempt; sums over tasks pool into the group's values."""
    traj = np.asarray(trajectory)
    it = np.asarray(iteration, dtype=np.int64)
    ok = np.asarray(correct, dtype=bool)
    prec = np.asarray(edit_precision, dtype=float)
    rec = np.asarray(bug_recall, dtype=float)
    deg = np.asarray(code_degenerate, dtype=float)
    first = _first_successes(traj, it, ok)
    later = first[it[first] >= 2]
    nums, dens = [], []
    for values in (prec[first], rec[first], deg[later]):
        v = values[~np.isnan(values)]
        nums.append(float(v.sum()))
        dens.append(float(v.size))
    return nums, dens, int(first.size)


def _first_successes(traj: np.ndarray, it: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Indices of each trajectory's first correct attempt: sort by (trajectory, iteration), keep the first."""
    idx = np.flatnonzero(ok)
    order = idx[np.lexsort((it[idx], traj[idx]))]
    return order[np.r_[True, traj[order][1:] != traj[order][:-1]]] if order.size else order


def attempt_lines(analysis: AttemptAnalysis | None) -> list[str]:
    """Plain lines for a TUI pane: edit precision and recall, lost features with their evidence."""
    if analysis is None:
        return ["Not analysed: only correct attempts are compared with the minimal fix and the reference."]
    lines = []
    e = analysis.edit
    if e is None:
        lines.append(f"Edit: unscored, no verified minimal fix ({analysis.unscored or 'none'}).")
    else:
        p = "n/a" if e.precision is None else f"{e.precision:.0%}"
        r = "n/a" if e.recall is None else f"{e.recall:.0%}"
        lines.append(
            f"Edit precision {p} ({e.needed} of {e.changed} changed lines needed, tolerance {e.tolerance}); "
            f"bug recall {r} ({e.recovered} of {len(e.blocks)} minimal-fix blocks)"
            + (f"; minimal fix {analysis.fix_origin}" if analysis.fix_origin else "")
        )
    d = analysis.degeneration
    if d.degenerate:
        lines.append("Degenerate: lost " + ", ".join(d.lost))
    elif d.lost:
        lines.append("Not degenerate; lost " + ", ".join(d.lost))
    else:
        lines.append("No performance feature of the reference lost.")
    if d.gained:
        lines.append("Gained " + ", ".join(d.gained))
    return lines


def attribution_rows(a: Attribution, kind: str = "component") -> list[tuple[str, ...]]:
    """Table rows (name, Shapley [low, high], Banzhaf [low, high]) per component or, kind='pair', per pair."""

    def num(x: float) -> str:
        return f"{round(x, 9) + 0.0:+.2f}"  # no "-0.00" for rounding noise around zero

    def cell(v: float, lo: float, hi: float) -> str:
        return f"{num(v)} [{num(lo)}, {num(hi)}]"

    if kind == "pair":
        return [
            ("×".join(p), cell(s.value, s.low, s.high), cell(b.value, b.low, b.high))
            for (p, s), b in zip(a.shapley_interaction.items(), a.banzhaf_interaction.values(), strict=True)
        ]
    return [
        (
            c,
            cell(a.shapley[c].value, a.shapley[c].low, a.shapley[c].high),
            cell(a.banzhaf[c].value, a.banzhaf[c].low, a.banzhaf[c].high),
        )
        for c in a.components
    ]


@dataclass(frozen=True)
class GroupCells:
    """Per-task sums of one group's analysis, the unit the bootstrap over tasks resamples.

    Columns of ``nums`` / ``dens`` are (edit_precision, bug_recall, code_degenerate_rate): the sum of the
    values over the task's trajectories' first correct attempts (the count of code-degenerate ones for
    the rate), and how many such attempts carried a value. The pooled ratio sum(nums) / sum(dens) over
    tasks is the ``summarize`` value of the whole group.
    """

    tasks: tuple[str, ...]
    nums: np.ndarray
    dens: np.ndarray
    analysed_repairs: int
    unscored_repairs: int = 0
    """Of the analysed repairs, those whose task has no verified minimal fix: edit precision and bug recall
    unscored (left out of both, never scored against the reference)."""


class CellsFold:
    """``run_cells`` one session at a time: ``add`` every session the attempts table scores (engine.metrics.
    attempts ``export_rows``, in its order), then ``cells``. Lets the metrics fold the analysis in the same
    pass over the files as the attempts table (its ``scored_taps``)."""

    def __init__(self, source_models: Mapping[str, str | None] | None = None) -> None:
        from beavertui.engine.metrics.attempts import SourceModels

        self._sources = SourceModels(source_models)
        self._columns: dict[GroupKey, dict[str, dict[str, list[float]]]] = {}
        self._trajectories = 0
        self._arms: dict[tuple[GroupKey, str, int], str] = {}
        self.fix_origins: set[str] = set()
        """Where the minimal fixes that scored a repair come from (AttemptAnalysis.fix_origin)."""

    def add(self, read: RunSession) -> None:
        from beavertui.engine.metrics.self_source import source_model_matches

        header, state = read.header, read.state
        if header.parent is not None:
            return
        p = header.protocol
        corpus = Path(header.task.corpus).name or header.task.corpus
        # an arm run twice (another run, or a second run folder with the same run id) is analysed once,
        # as the rates score it once: the first run's
        key = group_key(model_identity(header.model), p.key(), corpus)  # as the rates group
        if self._arms.setdefault((key, header.task.id, header.sample), read.run_id) != read.run_id:
            return
        self_source = bool(p.self_source) or source_model_matches(
            header.model.name, self._sources.lookup(header)
        )
        budget = p.budget - 1 if self_source and p.method == "iterative" else p.budget
        by_task = self._columns.setdefault(key, {})
        cols = by_task.setdefault(header.task.id, {k: [] for k in (*_SUMMARY_INPUTS, "unscored")})
        for a in state.attempts:
            if a.verdict is None or (p.method == "iterative" and a.iteration > budget):
                continue
            analysis = analyse(header.task, a)
            if analysis is not None and analysis.fix_origin:
                self.fix_origins.add(analysis.fix_origin)
            analysed = _columns(analysis)
            cols["unscored"].append(float(analysis is not None and analysis.edit is None))
            repeated = p.method == "repeated"
            cols["trajectory"].append(self._trajectories + (a.iteration if repeated else 0))
            cols["iteration"].append(1 if repeated else a.iteration)
            cols["correct"].append(float(a.verdict.correct))
            for name in ("edit_precision", "bug_recall", "code_degenerate"):
                value = analysed[name]
                cols[name].append(math.nan if value is None else float(value))  # type: ignore[arg-type]
        self._trajectories += p.budget + 1

    def cells(self) -> dict[GroupKey, GroupCells]:
        out: dict[GroupKey, GroupCells] = {}
        for key, by_task in self._columns.items():
            nums, dens, analysed_repairs, unscored = [], [], 0, 0
            for task_cols in by_task.values():
                num, den, repairs = first_success_sums(*(task_cols[k] for k in _SUMMARY_INPUTS))
                nums.append(num)
                dens.append(den)
                analysed_repairs += repairs
                first = _first_successes(
                    np.asarray(task_cols["trajectory"]),
                    np.asarray(task_cols["iteration"], dtype=np.int64),
                    np.asarray(task_cols["correct"], dtype=bool),
                )
                unscored += int(np.asarray(task_cols["unscored"], dtype=float)[first].sum())
            out[key] = GroupCells(
                tuple(by_task), np.asarray(nums, float), np.asarray(dens, float), analysed_repairs, unscored
            )
        return out


def run_cells(
    root: str | Path, source_models: Mapping[str, str | None] | None = None
) -> dict[GroupKey, GroupCells]:
    """Per (model, protocol) group, per task: the analysis of every session file under a run directory.

    Branch sessions (with a parent) are analyses, not part of the run, and are skipped; the sessions read are
    those the attempts table scores (``metrics.attempts.export_rows``: none it leaves out of every rate,
    withdrawn, unusable, unfinished or with a timing pending), and an arm run twice is analysed once
    (the first run's), as the rates score it. Only attempts within the budget count (K - 1 for self-sourced tasks,
    decided as the attempts table decides: the protocol's flag, else the side table ``source_models``
    task -> source model, else the task's instance.json).
    """
    from beavertui.engine.metrics.attempts import export_rows

    fold = CellsFold(source_models)
    for _row in export_rows(Path(root), scored_taps=(fold.add,)):  # the sessions the attempts table scores
        pass
    return fold.cells()


def run_summary(
    root: str | Path, source_models: Mapping[str, str | None] | None = None
) -> dict[GroupKey, dict[str, float | int | None]]:
    """``summarize`` per (model, protocol) group over every session file under a run directory, with the
    number of its repairs left unscored for want of a verified minimal fix."""
    out: dict[GroupKey, dict[str, float | int | None]] = {}
    for key, cells in run_cells(root, source_models).items():
        num, den = cells.nums.sum(axis=0), cells.dens.sum(axis=0)
        values = [float(n / d) if d > 0 else None for n, d in zip(num, den, strict=True)]
        out[key] = {
            "edit_precision": values[0],
            "bug_recall": values[1],
            "code_degenerate_rate": values[2],
            "analysed_repairs": cells.analysed_repairs,
            "unscored_repairs": cells.unscored_repairs,
        }
    return out


_SUMMARY_INPUTS = ("trajectory", "iteration", "correct", "edit_precision", "bug_recall", "code_degenerate")
