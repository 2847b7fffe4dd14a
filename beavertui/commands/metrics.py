"""`beavertui metrics SOURCE`: the protocol-conditioned tables of docs/metrics.md.

SOURCE is a run directory (its sessions are folded) or an attempts table (JSON Lines or CSV).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "metrics",
        help="compute pass@1, pass@k, debug rate, stagnation, degeneration, p sweep, swing, Kendall's tau",
        description="Per (model, protocol): every metric of docs/metrics.md, with 95% bootstrap intervals over "
        "tasks in the human formats. SOURCE is a run directory or an attempts table (.jsonl or .csv).",
    )
    p.add_argument("source", type=Path, help="run directory, session file, or attempts table")
    from beavertui.commands.formats import add_format_argument

    add_format_argument(p, "the machine-readable object of docs/metrics.md")
    p.add_argument(
        "-o", "--output", type=Path, help="write the report to this file instead of standard output"
    )
    p.add_argument(
        "--by", choices=("family", "category"), action="append", default=[], help="add a breakdown"
    )
    p.add_argument(
        "--source-models", type=Path, help="side table task_id -> source_model for the self-source rule"
    )
    p.add_argument(
        "--include-unfinished", action="store_true",
        help="also score sessions without an end record (left out by default; every table says so)",
    )  # fmt: skip
    p.add_argument(
        "--pairings",
        type=Path,
        help="protocol file whose [[pairings]] to report (default: those in the run directory's run.json)",
    )
    p.add_argument("--card", type=Path, help="also write the evaluation card (Markdown) to this file")
    p.add_argument("--plots", type=Path, help="also write p_sweep.svg and swing.svg into this folder")
    p.add_argument(
        "--resamples", type=int, default=1000, help="bootstrap resamples (at least 1000; default 1000)"
    )
    p.add_argument("--seed", type=int, default=None, help="bootstrap seed (default: a fixed seed)")
    p.add_argument(
        "--tui", action="store_true", help="show the tables, the p-sweep curves and the swing bars on screen"
    )
    p.set_defaults(func=_handle)


def load_source(
    source: Path, source_models: Path | None, stats: Any = None, include_unfinished: bool = False
) -> Any:
    """The attempts table of SOURCE with the self-source side table applied (``stats``: an ExportStats
    filled from a run directory's sessions)."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.metrics.attempts import SourceModels, load_source_models, table_from_run
    from beavertui.engine.metrics.compute import apply_source_models
    from beavertui.engine.metrics.table_io import TableFormatError, read_table

    side = load_source_models(source_models) if source_models else None
    if source.is_dir() or (source.is_file() and _is_session(source)):
        table = table_from_run(
            source, source_models=SourceModels(side), stats=stats, include_unfinished=include_unfinished
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

    def notes(self) -> list[str]:
        """What every table must say: unfinished sessions (left out, or included and marked) and the
        tasks whose correct attempts have no speedup (they count at p = 0 only)."""
        out = []
        st = self.stats
        if st is not None and st.unfinished_sessions:
            if st.unfinished_included:
                out.append(
                    f"INCLUDES {st.unfinished_sessions} UNFINISHED session(s), scored as they stand "
                    "(--include-unfinished): their rates are not final"
                )
            else:
                cmds = "; ".join(f"beavertui batch --resume {d}" for d in st.resume_dirs()) or (
                    "run them to the end"
                )
                out.append(
                    f"{st.unfinished_sessions} unfinished session(s) left out of every rate "
                    f"(finish them: {cmds})"
                )
        n = unspeeded_tasks(self.table)
        if n:
            out.append(
                f"{n} task(s) with a correct attempt but no speedup count at p = 0 only "
                "(left out of every rate above p = 0)"
            )
        return out


def unspeeded_tasks(table: Any) -> int:
    """Tasks with a correct attempt whose speedup is null (no reference, or a reference problem)."""
    import numpy as np

    hit = table.correct & np.isnan(table.speedup) & ~table.infra_error
    return len(set(table.col("task_id").codes[hit].tolist()))


def compute(
    source: Path,
    source_models: Path | None = None,
    include_unfinished: bool = False,
    pairings_file: Path | None = None,
) -> Report:
    """The metrics of SOURCE (a BeaverError for a bad source or one without attempts). Unfinished
    sessions of a run directory are left out unless ``include_unfinished``."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.metrics.attempts import ExportStats
    from beavertui.engine.metrics.compute import compute_groups
    from beavertui.engine.metrics.swing import kendall, swing

    stats = ExportStats()
    table = load_source(source, source_models, stats, include_unfinished)
    is_run = stats.sessions > 0 or bool(stats.damaged)
    if len(table) == 0:
        if is_run and stats.unfinished_sessions and not include_unfinished:
            dirs = stats.resume_dirs()
            hint = f"finish them with beavertui batch --resume {dirs[0]}" if dirs else "finish them"
            raise BeaverError(
                f"{source}: no finished session yet ({stats.unfinished_sessions} unfinished; {hint}, "
                "or score them as they stand with --include-unfinished)"
            )
        raise BeaverError(f"{source}: no attempts")
    groups = compute_groups(table)
    cells = _analysis_cells(source, source_models)
    usage = None
    if source.is_dir() or (source.is_file() and _is_session(source)):
        from beavertui.engine.metrics.usage import run_usage

        usage = run_usage(source)
    pairings = load_pairings(source, pairings_file)
    return Report(
        source, table, groups, swing(groups, pairings), kendall(groups, pairings), cells, stats=stats if is_run else None,
        usage=usage,
    )  # fmt: skip


def load_pairings(source: Path, pairings_file: Path | None) -> list[Any]:
    """Named pairings: from a protocol file when given, else from the run directory's run.json."""
    from beavertui.engine.metrics.swing import Pairing

    if pairings_file is not None:
        from beavertui.batch.protocol_file import find_protocol_file, load_batch_file

        spec = load_batch_file(find_protocol_file(str(pairings_file)))
        return [Pairing(p.name, p.a, p.b) for p in spec.pairings]
    manifest = source / "run.json" if source.is_dir() else None
    if manifest is None or not manifest.is_file():
        return []
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    out = []
    for p in data.get("pairings", []) if isinstance(data, dict) else []:
        if isinstance(p, dict) and isinstance(p.get("a"), dict) and isinstance(p.get("b"), dict):
            out.append(Pairing(str(p.get("name", "pairing")), p["a"], p["b"]))
    return out


def with_tables(
    report: Report, *, resamples: int = 1000, seed: int | None = None, by: Sequence[str] = ()
) -> Report:
    """Fill ``report.tables``: main and p sweep, analysis (from sessions), swing, Kendall, breakdowns."""
    from beavertui.engine.metrics.bootstrap import SEED
    from beavertui.reports.tables import (
        analysis_table,
        breakdown_table,
        kendall_table,
        main_tables,
        swing_table,
        usage_table,
    )

    seed = SEED if seed is None else seed
    groups = report.groups
    tables = main_tables(groups, resamples=resamples, seed=seed)
    if report.cells is not None:
        tables.append(analysis_table(groups, report.cells, resamples=resamples, seed=seed))
    if report.usage and any(g.reported for g in report.usage.values()):
        tables.append(usage_table(groups, report.usage))
    if report.swing:
        tables.append(swing_table(report.swing))
    if report.kendall:
        tables.append(kendall_table(report.kendall))
    if by:
        for name in dict.fromkeys(by):
            attr = _task_attribute(report.table, "family" if name == "family" else "label")
            tables.append(breakdown_table(groups, attr, name, resamples=resamples, seed=seed))
    from dataclasses import replace

    notes = report.notes()
    if notes:
        extra = "\n".join(notes)
        tables = [replace(t, note=f"{t.note}\n{extra}" if t.note else extra) for t in tables]
    report.tables = tables
    return report


NO_CODE = (
    "edit precision, bug recall and code degeneration need the candidates' code: "
    "give the run directory instead of an attempts table"
)


def _handle(args: argparse.Namespace) -> int:
    from beavertui import __version__
    from beavertui.commands.formats import output_format
    from beavertui.engine.errors import BeaverError

    fmt = output_format(args)
    if args.resamples < 1000:
        raise BeaverError("--resamples must be at least 1000 (docs/metrics.md)")
    if args.tui:
        if fmt != "table" or args.output is not None:
            raise BeaverError("--tui shows the tables on screen: drop --json, --format and --output")
        if not sys.stdout.isatty():
            raise BeaverError(
                "--tui needs a terminal (standard output is not one): drop --tui for the tables"
            )
    report = compute(
        args.source,
        args.source_models,
        include_unfinished=args.include_unfinished,
        pairings_file=args.pairings,
    )
    groups, sw, kt, cells = report.groups, report.swing, report.kendall, report.cells
    for line in report.notes():
        print(f"beavertui: {line}", file=sys.stderr)
    st = report.stats
    if st is not None and st.unspeeded:
        print(f"beavertui: {len(st.unspeeded)} correct attempt(s) without a speedup:", file=sys.stderr)
        for model, task, it, why in st.unspeeded[:50]:
            print(f"  {model} {task} attempt {it}: {why}", file=sys.stderr)
        if len(st.unspeeded) > 50:
            print(f"  ... and {len(st.unspeeded) - 50} more (--json lists them all)", file=sys.stderr)
    if fmt == "json":
        doc: dict[str, Any] = {
            "groups": [_group_json(g, cells) for g in groups],
            "swing": sw,
            "kendall_tau": kt,
        }
        if report.usage is not None:
            doc["usage"] = _usage_json(report.usage)
        if st is not None:
            doc["unfinished_sessions"] = st.unfinished_sessions
            doc["unfinished_included"] = st.unfinished_included
            doc["resume"] = [f"beavertui batch --resume {d}" for d in st.resume_dirs()]
            doc["unspeeded_attempts"] = [
                {"model": m, "task_id": t, "iteration": i, "reason": why} for m, t, i, why in st.unspeeded
            ]
        _emit(json.dumps(doc, indent=None, allow_nan=False), args.output)
        return 0
    from beavertui.reports import render

    with_tables(report, resamples=args.resamples, seed=args.seed, by=args.by)
    if cells is None and not args.tui:
        print(f"beavertui: {NO_CODE}", file=sys.stderr)
    if args.card:
        from beavertui.reports.card import card

        _write(args.card, card(args.source, groups, __version__, report.usage))
    if args.plots:
        from beavertui.reports.svg import p_sweep_svg, swing_svg

        args.plots.mkdir(parents=True, exist_ok=True)
        _write(args.plots / "p_sweep.svg", p_sweep_svg(groups))
        _write(args.plots / "swing.svg", swing_svg(sw))
    if args.tui:
        from beavertui.tui.app import BeaverApp
        from beavertui.tui.metrics_screen import MetricsScreen

        BeaverApp(
            lambda: MetricsScreen(
                args.source,
                args.source_models,
                report=report,
                resamples=args.resamples,
                seed=args.seed,
                by=args.by,
            )
        ).run()
        return 0
    if fmt == "table" and args.output is None:
        render.terminal(report.tables)
    else:
        # a file gets Markdown for "table": fitting to a terminal means nothing there
        text = {
            "table": render.markdown,
            "md": render.markdown,
            "csv": render.csv_text,
            "latex": render.latex,
        }
        _emit(text[fmt](report.tables), args.output)
    return 0


def _analysis_cells(source: Path, source_models: Path | None) -> dict[Any, Any] | None:
    """Edit and degeneration analysis per group from the sessions; None for an attempts table."""
    if not (source.is_dir() or (source.is_file() and _is_session(source))):
        return None
    from beavertui.engine.analysis.report import run_cells
    from beavertui.engine.metrics.attempts import load_source_models

    side = load_source_models(source_models) if source_models else None
    return dict(run_cells(source, side))


def _group_json(g: Any, cells: dict[Any, Any] | None) -> dict[str, Any]:
    """docs/metrics.md's group object plus the analysis keys (null when the source carries no code)."""
    from beavertui.engine.analysis.report import group_key

    doc: dict[str, Any] = g.as_json()
    c = None if cells is None else cells.get(group_key(g.model, g.protocol.as_dict(), g.corpus))
    num = c.nums.sum(axis=0) if c is not None and len(c.tasks) else None
    den = c.dens.sum(axis=0) if c is not None and len(c.tasks) else None
    for j, key in enumerate(("edit_precision", "bug_recall", "code_degenerate_rate")):
        doc[key] = float(num[j] / den[j]) if num is not None and den is not None and den[j] > 0 else None
    doc["analysed_repairs"] = None if cells is None else (c.analysed_repairs if c is not None else 0)
    return doc


def _usage_json(usage: dict[Any, Any]) -> list[dict[str, Any]]:
    """Per group: model, protocol, sessions, repaired, the summed usage, cost per session and per repair."""
    from beavertui.engine.metrics.table import PROTOCOL_FIELDS

    out = []
    for key, g in usage.items():
        out.append(
            {
                "model": key[0],
                "protocol": dict(zip(PROTOCOL_FIELDS, key[1:], strict=True)),
                "sessions": g.sessions,
                "repaired": g.repaired,
                **g.usage.model_dump(),
                "cost_per_session_usd": g.cost_per_session,
                "cost_per_repair_usd": g.cost_per_repair,
            }
        )
    return out


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


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        _write(output, text if text.endswith("\n") else text + "\n")


def _write(path: Path, text: str) -> None:
    from beavertui.engine.errors import BeaverError

    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BeaverError(f"{path}: {exc.strerror}") from None
