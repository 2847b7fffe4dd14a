"""`beavertui export RUN_DIR [--csv | --html] [-o FILE]`: write the attempts table of a run (docs/format.md), or
one self-contained HTML page of a session or of a run to share."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from beavertui.commands.paths import session_path


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write the attempts table of a run directory (JSON Lines, or CSV), or an HTML page to share",
        description="Folds every session under RUN_DIR into one row per attempt (docs/format.md). "
        "Attempts hit by an infrastructure failure are written with infra_error=true and never scored. "
        "With --html, writes one self-contained page instead: a session file gives its screen with "
        "step-through, a run directory gives its metrics, figures and every session.",
    )
    p.add_argument(
        "run_dir",
        type=session_path,
        help="a run directory (sessions/<run_id>) or one session file (demo:NAME: a bundled demo session)",
    )
    p.add_argument(
        "--csv", action="store_true", help="write CSV (protocol fields as protocol.<name> columns)"
    )
    p.add_argument(
        "--html",
        action="store_true",
        help="write one self-contained HTML page (no network, no external files) of the session or run",
    )
    p.add_argument("-o", "--output", type=Path, help="output file (default: standard output)")
    p.add_argument(
        "--source-models",
        type=Path,
        help="side table task_id -> source_model (JSON object, JSON Lines or CSV) for the self-source rule",
    )
    p.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.fileio import atomic_file
    from beavertui.engine.metrics.attempts import ExportStats, SourceModels, export_rows, load_source_models
    from beavertui.engine.metrics.table_io import write_csv, write_jsonl
    from beavertui.service.metrics import left_out_lines, no_session_left

    if args.output:
        from beavertui.service.outputs import check_output

        check_output(args.output, args.run_dir)
    if args.html:
        if args.csv:
            raise BeaverError("--csv and --html are two formats: give one")
        return _html(args)
    sources = SourceModels(load_source_models(args.source_models) if args.source_models else None)
    stats = ExportStats()
    rows = export_rows(args.run_dir, source_models=sources, stats=stats)
    write = write_csv if args.csv else write_jsonl
    if args.output:
        try:
            with atomic_file(args.output, newline="") as out:
                write(rows, out)
        except OSError as exc:
            raise BeaverError(f"{args.output}: {exc.strerror}") from None
    else:
        write(rows, sys.stdout)
    if stats.sessions == 0:
        if stats.damaged:
            raise BeaverError(f"{args.run_dir}: {no_session_left(stats)}")
        raise BeaverError(f"{args.run_dir}: no session files found")
    print(
        f"beavertui: {stats.rows} attempts from {stats.sessions} sessions"
        f" ({stats.infra_rows} hit by infrastructure failures, excluded from scores;"
        f" {stats.unfinished_sessions} sessions unfinished;"
        + (
            f" {stats.cut_attempts} judged attempts of {len(stats.cut_sessions)} sessions an infrastructure failure"
            " ended before their loop was over left out (batch --resume RUN_DIR --retry-infra runs them again);"
            if stats.cut_attempts
            else ""
        )
        + (
            f" {stats.withdrawn_sessions} sessions of tasks withdrawn from their run left out;"
            if stats.withdrawn_sessions
            else ""
        )
        + f" {len(stats.damaged)} files left out)",
        file=sys.stderr,
    )
    for line in left_out_lines(stats):
        print(f"beavertui: {line}", file=sys.stderr)
    return 0


def _html(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.fileio import write_atomic
    from beavertui.reports import html

    source: Path = args.run_dir
    if source.is_file():
        doc = html.load_session_doc(source)
        text = html.session_page(doc)
        what = f"session {doc.state.header.task.id} ({len(doc.state.attempts)} iterations)"
    elif source.is_dir():
        text, what = _run_html(source, args.source_models)
    else:
        raise BeaverError(f"{source}: no such run directory or session file")
    if args.output:
        try:
            write_atomic(args.output, text)
        except OSError as exc:
            raise BeaverError(f"{args.output}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
    size = len(text.encode())
    print(f"beavertui: wrote the page of {what}, {size / 1e6:.1f} MB", file=sys.stderr)
    return 0


def _run_html(source: Path, source_models: Path | None) -> tuple[str, str]:
    from beavertui import __version__
    from beavertui.engine.errors import BeaverError
    from beavertui.reports import html
    from beavertui.reports.card import card
    from beavertui.reports.svg import p_sweep_svg, swing_svg
    from beavertui.service.metrics import (
        compute,
        figures,
        left_out_lines,
        no_session_left,
        paper_report_tables,
        with_tables,
    )

    # one pass over the files: the metrics read the sessions they count, by the one reader policy, and hand
    # each to the page too (what the policy leaves out is said on the page, and why no rate counts a session)
    read: list[Any] = []
    try:
        report = compute(source, source_models, taps=(read.append,))
    except BeaverError:
        if read:
            raise
        from beavertui.engine.metrics.attempts import ExportStats, run_sessions

        stats = ExportStats()
        if any(True for _ in run_sessions(source, stats)):
            raise
        raise BeaverError(
            f"{source}: {no_session_left(stats) if stats.damaged else 'no session files found'}"
        ) from None
    report = with_tables(report)
    why = report.stats.rate_left_out if report.stats is not None else {}
    docs = [html.SessionDoc(r.state, r.path, r.problem, left_out=why.get(r.path)) for r in read]
    docs.sort(
        key=lambda d: (
            d.state.header.model.name,
            d.state.header.protocol.short(),
            d.state.header.task.id,
            d.state.header.sample,
        )
    )
    text = html.run_page(
        source,
        report.tables,
        p_sweep_svg(report.groups),
        swing_svg(report.swing) if report.swing else None,
        docs,
        figures=[svg for _name, svg in figures(report)],
        manifest=html.read_manifest(source),
        card=card(source, report.groups, __version__, report.usage, report.headers, report.notes()),
        skipped=report.stats.damaged if report.stats is not None else [],
        paper=paper_report_tables(report),
        shared_notes=report.notes(),
    )
    for line in left_out_lines(report.stats):
        print(f"beavertui: {line}", file=sys.stderr)
    return text, f"run {source.name} ({len(docs)} sessions)"
