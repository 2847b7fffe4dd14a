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
    p.add_argument("--json", action="store_true", help="print the machine-readable object of docs/metrics.md")
    p.add_argument(
        "--format",
        choices=("table", "markdown", "csv", "latex"),
        default="table",
        help="human format (default: a terminal table)",
    )
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


def load_source(source: Path, source_models: Path | None) -> Any:
    """The attempts table of SOURCE with the self-source side table applied."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.metrics.attempts import SourceModels, load_source_models, table_from_run
    from beavertui.engine.metrics.compute import apply_source_models
    from beavertui.engine.metrics.table_io import TableFormatError, read_table

    side = load_source_models(source_models) if source_models else None
    if source.is_dir() or (source.is_file() and _is_session(source)):
        table = table_from_run(source, source_models=SourceModels(side))
    elif source.is_file():
        try:
            table = read_table(source)
        except TableFormatError as exc:
            raise BeaverError(f"{source}: {exc}") from None
        if side:
            table = apply_source_models(table, side)
    else:
        raise BeaverError(f"{source}: no such run directory or attempts table")
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


def compute(source: Path, source_models: Path | None = None, pairings_file: Path | None = None) -> Report:
    """The metrics of SOURCE (a BeaverError for a bad source or one without attempts)."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.metrics.compute import compute_groups
    from beavertui.engine.metrics.swing import kendall, swing

    table = load_source(source, source_models)
    if len(table) == 0:
        raise BeaverError(f"{source}: no attempts")
    groups = compute_groups(table)
    cells = _analysis_cells(source, source_models)
    pairings = load_pairings(source, pairings_file)
    return Report(source, table, groups, swing(groups, pairings), kendall(groups, pairings), cells)


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
    )

    seed = SEED if seed is None else seed
    groups = report.groups
    tables = main_tables(groups, resamples=resamples, seed=seed)
    if report.cells is not None:
        tables.append(analysis_table(groups, report.cells, resamples=resamples, seed=seed))
    if report.swing:
        tables.append(swing_table(report.swing))
    if report.kendall:
        tables.append(kendall_table(report.kendall))
    if by:
        for name in dict.fromkeys(by):
            attr = _task_attribute(report.table, "family" if name == "family" else "label")
            tables.append(breakdown_table(groups, attr, name, resamples=resamples, seed=seed))
    report.tables = tables
    return report


NO_CODE = (
    "edit precision, bug recall and code degeneration need the candidates' code: "
    "give the run directory instead of an attempts table"
)


def _handle(args: argparse.Namespace) -> int:
    from beavertui import __version__
    from beavertui.engine.errors import BeaverError

    if args.resamples < 1000:
        raise BeaverError("--resamples must be at least 1000 (docs/metrics.md)")
    if args.tui:
        if args.json or args.output is not None or args.format != "table":
            raise BeaverError("--tui shows the tables on screen: drop --json, --format and --output")
        if not sys.stdout.isatty():
            raise BeaverError(
                "--tui needs a terminal (standard output is not one): drop --tui for the tables"
            )
    report = compute(args.source, args.source_models, args.pairings)
    groups, sw, kt, cells = report.groups, report.swing, report.kendall, report.cells
    if args.json:
        doc = {"groups": [_group_json(g, cells) for g in groups], "swing": sw, "kendall_tau": kt}
        _emit(json.dumps(doc, indent=None, allow_nan=False), args.output)
        return 0
    from beavertui.reports import render

    with_tables(report, resamples=args.resamples, seed=args.seed, by=args.by)
    if cells is None and not args.tui:
        print(f"beavertui: {NO_CODE}", file=sys.stderr)
    if args.card:
        from beavertui.reports.card import card

        _write(args.card, card(args.source, groups, __version__))
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
    if args.format == "table" and args.output is None:
        render.terminal(report.tables)
    else:
        text = {
            "table": render.markdown,
            "markdown": render.markdown,
            "csv": render.csv_text,
            "latex": render.latex,
        }[args.format](report.tables)
        _emit(text, args.output)
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
