"""The metrics of a run directory, a session file or an attempts table, and their tables.

``compute`` folds the source into the attempts table and computes every group's metrics, swing and
Kendall's tau; ``with_tables`` lays them out as report tables. The ``metrics`` command, the TUI's metrics
screen and the HTML export all call these two, so they show the same numbers. Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _first_reasons(why: dict[str, str]) -> str:
    """The first three tasks (by id) with their reasons, and "..." when there are more."""
    first = sorted(why.items())[:3]
    return "; ".join(f"{t}: {w}" for t, w in first) + ("; ..." if len(why) > 3 else "")


def load_source(
    source: Path,
    source_models: Path | None,
    stats: Any = None,
    include_unfinished: bool = False,
    taps: Sequence[Any] = (),
    side: dict[str, str | None] | None = None,
    scored_taps: Sequence[Any] = (),
) -> Any:
    """The attempts table of SOURCE with the self-source side table applied (``stats``: an ExportStats
    filled from a run directory's sessions; ``taps``: engine.metrics.attempts.SessionTap, each handed
    every session read; ``scored_taps``: each handed every session the table scores; ``side``: the side
    table SOURCE_MODELS already loaded)."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.metrics.attempts import SourceModels, load_source_models, table_from_run
    from beavertui.engine.metrics.compute import apply_source_models
    from beavertui.engine.metrics.table_io import TableFormatError, read_table

    if side is None and source_models:
        side = load_source_models(source_models)
    if is_run_source(source):
        table = table_from_run(
            source,
            source_models=SourceModels(side),
            stats=stats,
            include_unfinished=include_unfinished,
            taps=taps,
            scored_taps=scored_taps,
        )
    elif source.is_file():
        try:
            table = read_table(source)
        except TableFormatError as exc:
            raise BeaverError(f"{source}: {exc}") from None
        if side:
            table = apply_source_models(table, side)
    else:
        from beavertui.engine.fileio import missing

        raise missing(source, "run directory or attempts table")
    return table


def is_run_source(source: Path) -> bool:
    """SOURCE holds session files (a run directory or one session file), not an attempts table."""
    return source.is_dir() or (source.is_file() and _is_session(source))


def _is_session(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            first = f.readline(4096)
    except OSError:
        return False
    return b'"kind":"header"' in first.replace(b" ", b"")


@dataclass
class Report:
    """Everything `metrics` shows for one source: the groups, the cross-protocol numbers and the tables."""

    source: Path
    table: Any
    """The attempts table (engine.table.AttemptsTable)."""
    groups: list[Any]
    swing: list[dict[str, Any]]
    kendall: list[dict[str, Any]]
    cells: dict[Any, Any] | None
    tables: list[Any] = field(default_factory=list)
    """reports.tables.Table in the order the terminal prints them (empty until ``with_tables``)."""
    usage: dict[Any, Any] | None = None
    """Tokens and cost per group (engine.metrics.usage), from the sessions; None for an attempts table."""
    stats: Any = None
    """engine.metrics.attempts.ExportStats of a run directory's sessions (None for an attempts table)."""
    rates: list[Any] = field(default_factory=list)
    """Per group, in order: every rate with its interval (reports.tables.rates; filled by ``with_tables``)."""
    paper: Any = None
    """engine.metrics.paper_tables.PaperTables: the paper's Table 1 and Table 2 of these groups."""
    gate: float | None = None
    """The gate every rate was re-scored at (``metrics --gate``), None for each protocol's own."""
    kept_gate: list[Any] = field(default_factory=list)
    """Protocols whose in-loop gate decided where trajectories stopped, so --gate left them as they were."""
    repeated_arms: dict[str, int] = field(default_factory=dict)
    """Run id -> trajectories left out because an earlier run in the source already holds that arm."""
    against: list[tuple[str, Any]] = field(default_factory=list)
    fix_origins: tuple[str, ...] = ()
    """Where the minimal fixes that scored the repairs come from (the analysis table's note says it)."""
    """(baseline name, GroupMetrics) of every group re-judged against each named baseline its sessions
    recorded (engine.metrics.compute on AttemptsTable.against_baseline), baseline by baseline."""
    headers: list[Any] | None = None
    """The header of every session read, less its task's texts (the card's protocols, corpora, models; None
    for an attempts table)."""

    def notes(self) -> list[str]:
        """What every table must say: unfinished sessions (left out, or included and marked), sessions of
        tasks withdrawn from their run or found unusable on their GPU by the batch, and the tasks whose correct attempts have no speedup (they count at
        p = 0 only)."""
        st = self.stats
        out = [] if st is None else _unfinished_notes(st)
        out += self._rescoring_notes()
        if st is not None:
            out += _run_notes(st)
        return out + _table_notes(self.table)

    def _rescoring_notes(self) -> list[str]:
        """--gate, the protocols it left at their own gate, and arms run twice."""
        out = []
        if self.gate is not None:
            out.append(f"every rate re-scored at gate p = {self.gate:g} (--gate)")
        for p in self.kept_gate:
            out.append(
                f"{p.short()}: an in-loop gate of {p.gate:g} decided where its trajectories stopped, so it keeps "
                "its own gate (its p sweep gives the other p)"
            )
        if self.repeated_arms:
            out.append(
                "an arm run twice is scored once: left out "
                + ", ".join(f"{n} trajectories of run {r}" for r, n in sorted(self.repeated_arms.items()))
                + " (an earlier run in the source holds the same model, protocol, task and sample)"
            )
        return out


def _unfinished_notes(st: Any) -> list[str]:
    """Sessions left out (or included and marked) because they did not finish: unfinished, cut by an
    infrastructure failure, stopped, waiting for timings, or of a task withdrawn from their run."""
    out = []
    if st.unfinished_sessions:
        if st.unfinished_included:
            out.append(_included(f"{st.unfinished_sessions} UNFINISHED session(s)"))
        else:
            cmds = "; ".join(f"beavertui batch --resume {d}" for d in st.resume_dirs()) or (
                "run them to the end"
            )
            out.append(
                f"{st.unfinished_sessions} unfinished session(s) left out of every rate (finish them: {cmds})"
            )
    if st.cut_sessions:
        cut = len(st.cut_sessions)
        if st.unfinished_included:
            out.append(
                _included(f"{cut} session(s) an infrastructure failure ended before their loop was over")
            )
        else:
            from beavertui.engine.metrics.attempts import run_dir_of

            lone = [p for p in st.cut_sessions if run_dir_of(p) is None]  # live sessions: no run
            cmds = "; ".join(
                [f"beavertui batch --resume {d} --retry-infra" for d in st.resume_dirs(cut=True)]
                + [f"beavertui live --resume {p}" for p in lone[:3]]
                + ([f"and {len(lone) - 3} more"] if len(lone) > 3 else [])
            )
            out.append(
                f"{cut} session(s) an infrastructure failure ended before their loop was over (budget left): "
                f"their {st.cut_attempts} judged attempt(s) are left out of every rate, a task with no other "
                f"session in no row (run them again once the cause is fixed: {cmds or 'run them again'})"
            )
    if st.stopped_sessions:
        n = len(st.stopped_sessions)
        if st.unfinished_included:
            out.append(_included(f"{n} session(s) stopped before their loop was over"))
        else:
            first = "; ".join(f"beavertui live --resume {p}" for p in st.stopped_sessions[:3])
            more = f"; and {n - 3} more" if n > 3 else ""
            out.append(
                f"{n} session(s) stopped before their loop was over (live's x or Ctrl-C): their "
                f"{st.stopped_attempts} judged attempt(s) are left out of every rate, a task with no other "
                f"session in no row (go on with them: {first}{more}; with the --toolchain each ran on, where "
                "a replay)"
            )
    if st.timings_pending:
        cmds = "; ".join(f"beavertui batch --resume {d}" for d in st.resume_dirs()) or "resume their run"
        left = "included as they stand, NOT FINAL" if st.unfinished_included else "left out of every rate"
        out.append(
            f"{st.timings_pending} timing(s) pending in {len(st.pending_sessions)} session(s), {left} "
            f"until the timing lane has appended them ({cmds})"
        )
    if st.withdrawn_sessions:
        out.append(
            f"{st.withdrawn_sessions} session(s) of {len(st.withdrawn)} task(s) withdrawn from their run "
            "left out of every rate (validated unusable after the run began; run.json withdrawn_tasks: "
            + ", ".join(sorted(st.withdrawn)[:5])
            + (", ..." if len(st.withdrawn) > 5 else "")
            + ")"
        )
    return out


def _run_notes(st: Any) -> list[str]:
    """What the run and its reader left out or kept apart: excluded and unusable tasks, damaged files, run ids
    two folders share, candidates a recorded toolchain had no outcome for."""
    out = []
    if st.excluded:
        out.append(
            f"{len(st.excluded)} task(s) left out of the run before it began (run.json excluded_tasks), in no "
            "row: " + _first_reasons(st.excluded)
        )
    if st.unusable_sessions:
        out.append(
            f"{st.unusable_sessions} session(s) of {len(st.unusable)} task(s) found unusable on their GPU "
            "by the batch's own check, left out of every rate: " + _first_reasons(st.unusable)
        )
    if st.damaged:
        out.append(left_out_note(st))
    if st.shared_run_ids:
        out.append(
            "two runs that share one run id are kept apart by their folders: "
            + "; ".join(f"{r}: {', '.join(f)}" for r, f in sorted(st.shared_run_ids.items()))
            + " (the rows of each folder after the first carry ID (FOLDER) as their run id)"
        )
    if st.unrecorded_attempts:
        out.append(
            f"{st.unrecorded_attempts} attempt(s) of {len(st.unrecorded_tasks)} task(s) were candidates the "
            "recorded toolchain had no outcome for (unrecorded candidate): counted as failed builds by rule, "
            "nothing was built, so those rates say nothing about the model (a GPU run judges them)"
        )
    return out


def _table_notes(table: Any) -> list[str]:
    """Tasks whose correct attempts count at p = 0 only: no speedup, or no baseline for their gate."""
    out = []
    n = unspeeded_tasks(table)
    if n:
        out.append(
            f"{n} task(s) with a correct attempt but no speedup count at p = 0 only "
            "(no success in any rate above p = 0: no speedup to hold against p)"
        )
    for proto, name, tasks in gate_baseline_missing(table):
        first = ", ".join(tasks[:5]) + (", ..." if len(tasks) > 5 else "")
        out.append(
            f"{proto}: {len(tasks)} task(s) with a correct attempt have no {name} baseline on their sessions' "
            f"GPU ({first}): under this protocol's gate on {name} they count at p = 0 only (no success in "
            "any rate above p = 0)"
        )
    return out


class WithdrawnFrom:
    """Why every rate leaves out a session its run holds: its task was withdrawn from that run (run.json
    ``withdrawn_tasks``, as ``export_rows`` reads it), else None. Each run's manifest is read once."""

    def __init__(self) -> None:
        self._runs: dict[Path | None, dict[str, str]] = {}

    def __call__(self, path: Path, task_id: str) -> str | None:
        from beavertui.engine.metrics.attempts import run_dir_of, withdrawn_tasks

        run = run_dir_of(path)
        if run not in self._runs:
            self._runs[run] = withdrawn_tasks(run)
        why = self._runs[run].get(task_id)
        return None if why is None else f"withdrawn from its run: {why}"


#: How many left-out files a command names one line each before it says how many more there are.
LEFT_OUT_SHOWN = 50


def left_out_note(stats: Any) -> str:
    """The note every table carries when the reader policy left files out: how many, and the first reasons."""
    n = len(stats.damaged)
    first = "; ".join(stats.damaged[:3])
    more = f"; ... ({n - 3} more)" if n > 3 else ""
    what = "not readable as sessions of the run"
    return f"{n} file(s) or folder(s) left out of every rate, {what}: {first}{more}"


def no_session_left(stats: Any) -> str:
    """Why a folder gave no session: every file left out, how many and the first reason (one line)."""
    n = len(stats.damaged)
    return f"no readable session: {n} file(s) or folder(s) left out, the first: {stats.damaged[0]}"


def left_out_lines(
    stats: Any, shown: int = LEFT_OUT_SHOWN, more: str = " (--json lists them all)"
) -> list[str]:
    """One line per file the reader policy left out (``left out PATH: why``), at most ``shown`` and then
    how many more; what ``metrics``, ``export``, ``browse`` and the batch summary print alike. ``stats``: an
    ExportStats (its ``damaged``), or the lines themselves."""
    damaged: list[str] = stats if isinstance(stats, list) else [] if stats is None else stats.damaged
    if not damaged:
        return []
    out = [f"left out {line}" for line in damaged[:shown]]
    if len(damaged) > shown:
        out.append(f"... and {len(damaged) - shown} more left out{more}")
    return out


def _without_gate_baseline(table: Any) -> Any:
    """Rows of a protocol whose gate names a baseline their session's header does not have."""
    import numpy as np

    out = np.zeros(len(table), np.bool_)
    for i, p in enumerate(table.protocols):
        if p.gate_baseline != "reference":
            out |= (table.protocol == i) & ~table.has_baseline(p.gate_baseline)
    return out


def unspeeded_tasks(table: Any) -> int:
    """Tasks with a correct attempt whose speedup is null (no reference, a reference problem, the attempt
    not timed), those of a protocol gated on a baseline its task lacks aside (gate_baseline_missing)."""
    import numpy as np

    hit = table.correct & np.isnan(table.speedup) & ~table.infra_error & ~_without_gate_baseline(table)
    return len(set(table.col("task_id").codes[hit].tolist()))


def gate_baseline_missing(table: Any) -> list[tuple[str, str, list[str]]]:
    """(protocol label, baseline, task ids) per protocol whose gate names a baseline (gate_baseline) that
    some of its tasks with a correct attempt lack on their sessions' GPU: those count at p = 0 only."""
    import numpy as np

    out = []
    missing = _without_gate_baseline(table) & table.correct & ~table.infra_error
    tasks = table.col("task_id")
    for i, p in enumerate(table.protocols):
        hit = missing & (table.protocol == i)
        if hit.any():
            ids = sorted({tasks.labels[c] for c in np.unique(tasks.codes[hit]).tolist()})
            out.append((p.short(), p.gate_baseline, ids))
    return out


def compute(
    source: Path,
    source_models: Path | None = None,
    include_unfinished: bool = False,
    pairings_file: Path | None = None,
    gate: float | None = None,
    taps: Sequence[Any] = (),
) -> Report:
    """The metrics of SOURCE (a BeaverError for a bad source or one without attempts). Unfinished
    sessions of a run directory are left out unless ``include_unfinished``; ``gate`` re-scores every
    protocol whose loop did not depend on its gate at that p (engine/metrics/rescore.py). The session
    files are read once: the table, the analysis, the usage and the headers come from that one pass, and
    each of ``taps`` (engine.metrics.attempts.SessionTap) is handed every session it read."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.metrics.attempts import ExportStats, load_source_models
    from beavertui.engine.metrics.compute import compute_groups
    from beavertui.engine.metrics.swing import kendall, swing

    stats = ExportStats()
    side = load_source_models(source_models) if source_models else None
    run = is_run_source(source)
    cells_fold = usage_fold = None
    headers: list[Any] | None = None
    if run:
        from beavertui.engine.analysis.report import CellsFold
        from beavertui.engine.metrics.usage import UsageFold

        cells_fold, usage_fold, headers = CellsFold(side), UsageFold(), []
        taps = (usage_fold.add, lambda read: headers.append(_light(read.header)), *taps)
    # the analysis (edit precision, bug recall, degeneration by the code) scores the sessions the rates score
    scored = (cells_fold.add,) if cells_fold is not None else ()
    table = load_source(
        source, source_models, stats, include_unfinished, taps=taps, side=side, scored_taps=scored
    )
    is_run = stats.sessions > 0 or bool(stats.damaged)
    if len(table) == 0:
        raise _nothing_to_score(source, stats, include_unfinished)
    from beavertui.engine.metrics.paper_tables import paper_tables
    from beavertui.engine.metrics.rescore import drop_repeated_arms, with_gate

    table, repeated_arms = drop_repeated_arms(table)
    by_reference = (table.speedup, table.speedup_lo, table.speedup_hi)
    table = table.with_gate_baselines()
    kept_gate: list[Any] = []
    if gate is not None:
        try:
            table, kept_gate = with_gate(table, gate)
        except ValueError as exc:
            raise BeaverError(f"--gate: {exc}") from None
    groups = compute_groups(table)
    against = baseline_groups(table, by_reference)
    cells = dict(cells_fold.cells()) if cells_fold is not None else None
    usage = usage_fold.groups if usage_fold is not None else None
    pairings = load_pairings(source, pairings_file)
    return Report(
        source, table, groups, swing(groups, pairings), kendall(groups, pairings), cells, stats=stats if is_run else None,
        usage=usage, paper=paper_tables(groups, rescored_gate=gate), gate=gate, kept_gate=kept_gate,
        repeated_arms=repeated_arms, against=against, headers=headers,
        fix_origins=tuple(sorted(cells_fold.fix_origins)) if cells_fold is not None else (),
    )  # fmt: skip


def _nothing_to_score(source: Path, stats: Any, include_unfinished: bool) -> Exception:
    """Why SOURCE gave no attempt to score, and what to do about it."""
    from beavertui.engine.errors import BeaverError

    is_run = stats.sessions > 0 or bool(stats.damaged)
    if is_run and stats.timings_pending and not include_unfinished:
        dirs = stats.resume_dirs()
        hint = f"beavertui batch --resume {dirs[0]}" if dirs else "resume their run"
        return BeaverError(
            f"{source}: nothing final to score yet: {stats.timings_pending} timing(s) pending in "
            f"{len(stats.pending_sessions)} session(s) ({hint} times them; --include-unfinished scores "
            "them as they stand)"
        )
    if is_run and stats.unfinished_sessions and not include_unfinished:
        dirs = stats.resume_dirs()
        hint = f"finish them with beavertui batch --resume {dirs[0]}" if dirs else "finish them"
        return BeaverError(
            f"{source}: no finished session yet ({stats.unfinished_sessions} unfinished; {hint}, "
            "or score them as they stand with --include-unfinished)"
        )
    if is_run and (stats.stopped_sessions or stats.cut_sessions) and not include_unfinished:
        said = [f"{len(stats.stopped_sessions)} stopped"] if stats.stopped_sessions else []
        said += (
            [f"{len(stats.cut_sessions)} ended by an infrastructure failure"] if stats.cut_sessions else []
        )
        hint = (
            f"beavertui live --resume {stats.stopped_sessions[0]}"
            if stats.stopped_sessions
            else f"beavertui batch --resume {stats.resume_dirs(cut=True)[0]} --retry-infra"
            if stats.resume_dirs(cut=True)
            else f"beavertui live --resume {stats.cut_sessions[0]}"
        )
        return BeaverError(
            f"{source}: no session has run its loop to the end ({' and '.join(said)} before it was over; go "
            f"on with {hint} (and the --toolchain it ran on, where a replay), or score them as they stand "
            "with --include-unfinished)"
        )
    if stats.sessions == 0 and stats.damaged:
        return BeaverError(f"{source}: {no_session_left(stats)}")
    return BeaverError(f"{source}: no attempts")


def _light(header: Any) -> Any:
    """A session header without its task's broken start and reference (kept for every session of a run:
    the texts are most of a header's size, and the card reads none of them)."""
    return header.model_copy(
        update={"task": header.task.model_copy(update={"broken_start": "", "reference": None})}
    )


def baseline_groups(table: Any, by_reference: tuple[Any, Any, Any] | None = None) -> list[tuple[str, Any]]:
    """Every group's metrics against each named baseline some attempt's session recorded: the rows of the
    tasks that have it, each speedup the one against it, the protocol's gate p applied to that speedup.
    ``by_reference``: the rows' speedup and its interval against the reference (the table's own before
    ``with_gate_baselines``); with it, a protocol whose gate names a baseline is also scored against the
    reference (``("reference", group)``, first), as a protocol gated on the reference is in its main row."""
    import dataclasses

    import numpy as np

    from beavertui.engine.metrics.compute import compute_groups
    from beavertui.engine.session.events import BASELINE_NAMES

    labels = table.col("baselines").labels
    out: list[tuple[str, Any]] = []
    named = np.array([p.gate_baseline != "reference" for p in table.protocols], np.bool_)
    if by_reference is not None and len(table) and named.any():
        speed, lo, hi = by_reference
        ref = dataclasses.replace(table, speedup=speed, speedup_lo=lo, speedup_hi=hi).take(
            named[table.protocol]
        )
        out += [("reference", g) for g in compute_groups(ref)]
    for name in BASELINE_NAMES:
        if not any(name in label.split("+") for label in labels):
            continue
        sub = table.against_baseline(name)
        if len(sub):
            out += [(name, g) for g in compute_groups(sub)]
    return out


def load_pairings(source: Path, pairings_file: Path | None) -> list[Any]:
    """Named pairings: from a protocol file when given, else from the run directory's run.json."""
    from beavertui.engine.fileio import parse_json
    from beavertui.engine.metrics.swing import Pairing
    from beavertui.engine.session.events import has_control

    if pairings_file is not None:
        from beavertui.batch.protocol_file import find_protocol_file, load_batch_file

        spec = load_batch_file(find_protocol_file(str(pairings_file)))
        return [Pairing(p.name, p.a, p.b) for p in spec.pairings]
    manifest = source / "run.json" if source.is_dir() else None
    if manifest is None or not manifest.is_file():
        return []
    try:
        data = parse_json(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for p in data.get("pairings", []) if isinstance(data, dict) else []:
        if not (isinstance(p, dict) and isinstance(p.get("a"), dict) and isinstance(p.get("b"), dict)):
            continue
        name = str(p.get("name", "pairing"))
        # a name the protocol file could not hold (empty, a control character) is a damaged run.json's
        if name and not has_control(name):
            out.append(Pairing(name, p["a"], p["b"]))
    return out


def with_tables(
    report: Report,
    *,
    resamples: int = 1000,
    seed: int | None = None,
    by: Sequence[str] = (),
    paper: bool = False,
    machine: bool = False,
) -> Report:
    """Fill ``report.tables``: main and p sweep, analysis (from sessions), swing, Kendall, breakdowns; with
    ``paper``, the paper's Table 1 and Table 2 instead (reports/paper.py). ``machine``: for a program (CSV),
    the tables that people read with abbreviated numbers (tokens, dollars) give one plain number a cell."""
    if paper:
        report.tables = paper_report_tables(report)
        return report
    from beavertui.engine.metrics.bootstrap import SEED
    from beavertui.reports.tables import (
        analysis_table,
        few_shot_grid,
        few_shot_table,
        kendall_table,
        main_tables,
        rates,
        swing_table,
        usage_table,
    )

    seed = SEED if seed is None else seed
    groups = report.groups
    report.rates = [rates(g, resamples, seed) for g in groups]
    tables = main_tables(groups, resamples=resamples, seed=seed, group_rates=report.rates)
    if report.against:
        from beavertui.reports.tables import baselines_table

        tables.append(baselines_table(groups, report.rates, report.against, resamples=resamples, seed=seed))
    if report.cells is not None:
        tables.append(
            analysis_table(
                groups,
                report.cells,
                resamples=resamples,
                seed=seed,
                group_rates=report.rates,
                fix_origins=report.fix_origins,
            )
        )
    # shown where some reply had a count, or an endpoint answered without one (its tokens are unknown, and said)
    if report.usage and any(g.reported or g.unreported_by_endpoint for g in report.usage.values()):
        tables.append(usage_table(groups, report.usage, machine=machine))
    for shots in (few_shot_grid(groups), few_shot_table(groups, report.rates)):
        if shots is not None:
            tables.append(shots)
    if report.swing:
        tables.append(swing_table(report.swing))
    if report.kendall:
        tables.append(kendall_table(report.kendall))
    tables += _breakdown_tables(report, by, resamples, seed)
    from dataclasses import replace

    notes = report.notes()
    if notes:
        extra = "\n".join(notes)
        tables = [replace(t, note=f"{t.note}\n{extra}" if t.note else extra) for t in tables]
    report.tables = tables
    return report


def _breakdown_tables(report: Report, by: Sequence[str], resamples: int, seed: int) -> list[Any]:
    """The ``--by`` breakdowns (family, category, observed category), each once, in the order asked."""
    from dataclasses import replace

    from beavertui.reports.tables import breakdown_table

    tables = []
    for name in dict.fromkeys(by):
        unknown = 0
        if name == "observed":
            attr = _observed_labels(report.table)
            name = "observed category"
            if report.stats is not None:
                unknown = len(report.stats.observed_unrecorded & set(attr))
        else:
            attr = _task_attribute(report.table, "family" if name == "family" else "label")
        t = breakdown_table(report.groups, attr, name, resamples=resamples, seed=seed)
        if unknown:
            say = (
                f"{unknown} task(s) grouped by their label: their session headers were written before "
                "beavertui recorded the observed category, so whether validation corrected it is unknown"
            )
            t = replace(t, note=f"{t.note}\n{say}" if t.note else say)
        tables.append(t)
    return tables


def paper_report_tables(report: Report) -> list[Any]:
    """The paper's Table 1 and Table 2 of ``report`` (reports/paper.py), each note followed by what every
    table must say (``Report.notes``)."""
    from dataclasses import replace

    from beavertui.reports.paper import paper_tables

    extra = "\n".join(report.notes())
    return [replace(t, note=f"{t.note}\n{extra}") if extra else t for t in paper_tables(report.paper)]


def figures(report: Report) -> list[tuple[str, str]]:
    """The figures beyond the p sweep and swing, as (file name, SVG) in the order a page shows them: how
    sessions ended (stagnation modes), the speedups of correct repairs, pass@k over the feedback levels,
    history windows and few-shot examples, and the models' ranks behind Kendall's tau (docs/metrics.md, Figures). The
    numbers are the groups' own (engine/metrics/figures.py), each figure says what it leaves out."""
    from beavertui.engine.metrics.figures import (
        group_label,
        level_panels,
        rank_charts,
        speedup_histograms,
        stagnation_modes,
    )
    from beavertui.reports.svg_figures import levels_svg, ranks_svg, speedup_svg, stagnation_svg

    groups = report.groups
    modes = stagnation_modes(groups)
    drawn = {m["label"] for m in modes}
    rep = [group_label(g) for g in groups if g.protocol.method == "repeated"]
    unscored = [
        group_label(g) for g in groups if g.protocol.method != "repeated" and group_label(g) not in drawn
    ]
    left = []
    if rep:
        left.append(
            f"Left out: {len(rep)} repeated-sampling group(s), no loop for a detector to stop: " + _first(rep)
        )
    if unscored:
        left.append(f"Left out: {len(unscored)} group(s) with no scored trajectory: " + _first(unscored))
    hists = speedup_histograms(groups)
    shown = {h["label"] for h in hists}
    none = [group_label(g) for g in groups if group_label(g) not in shown]
    left_hist = [f"Left out: {len(none)} group(s) with no correct repair: " + _first(none)] if none else []
    if any(g.n_flagged_successes for g in groups):
        n = sum(g.n_flagged_successes for g in groups)
        left_hist.append(f"Left out: {n} flagged success(es) (anti-cheat findings count in no rate)")
    return [
        ("stagnation_modes.svg", stagnation_svg(modes, left)),
        ("speedups.svg", speedup_svg(hists, left_hist)),
        ("levels.svg", levels_svg(level_panels(report.swing))),
        ("ranks.svg", ranks_svg(rank_charts(groups, report.kendall))),
    ]


def _first(labels: Sequence[str], shown: int = 5) -> str:
    return "; ".join(labels[:shown]) + (f"; and {len(labels) - shown} more" if len(labels) > shown else "")


NO_CODE = (
    "edit precision, bug recall and code degeneration need the candidates' code: "
    "give the run directory instead of an attempts table"
)


def _observed_labels(table: Any) -> dict[str, str | None]:
    """task_id -> the category its validation observed where that corrected the label, else the label's."""
    labels = _task_attribute(table, "label")
    observed = _task_attribute(table, "observed_label")
    return {t: observed.get(t) or labels.get(t) for t in labels}


def _task_attribute(table: Any, column: str) -> dict[str, str | None]:
    """task_id -> family or label (mapped to docs/format.md (categories) names) from the first row of each task."""
    import numpy as np

    from beavertui.engine.judge.categories import label_category

    tasks = table.col("task_id")
    col = table.col(column)
    _, first = np.unique(tasks.codes, return_index=True)
    out: dict[str, str | None] = {}
    for i in first.tolist():
        code = int(col.codes[i])
        value = col.labels[code] if code >= 0 else None
        out[tasks.labels[int(tasks.codes[i])]] = (
            label_category(value) if value and column == "label" else value
        )
    return out


def _included(sessions: str) -> str:
    """The note of sessions not over that --include-unfinished scores as they stand."""
    return f"INCLUDES {sessions}, scored as they stand (--include-unfinished): their rates are not final"
