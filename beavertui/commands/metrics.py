"""`beavertui metrics SOURCE`: the protocol-conditioned tables of docs/metrics.md.

SOURCE is a run directory (its sessions are folded) or an attempts table (JSON Lines or CSV). What the
numbers are is service/metrics.py's (the TUI's metrics screen and the HTML export use it too); this module
reads the flags and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from beavertui.commands.numbers import MAX_RESAMPLES, MIN_RESAMPLES, float_in, int_in
from beavertui.commands.paths import given_path, session_path
from beavertui.engine.limits import MAX_GATE, MAX_SEED


def register(sub: Any) -> None:
    p = sub.add_parser(
        "metrics",
        help="compute pass@1, pass@k, debug rate, stagnation, degeneration, p sweep, swing, Kendall's tau",
        description="Per (model, protocol): every metric of docs/metrics.md, with 95% bootstrap intervals over "
        "tasks in the human formats. SOURCE is a run directory or an attempts table (.jsonl or .csv).",
    )
    p.add_argument("source", type=session_path, help="run directory, session file, or attempts table")
    from beavertui.commands.formats import add_format_argument

    add_format_argument(p, "the machine-readable object of docs/metrics.md")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        help="write the report to this file instead of standard output; with --format csv and several "
        "tables, a folder: one CSV file per table (main.csv, p_sweep.csv, ...)",
    )
    p.add_argument(
        "--table",
        metavar="NAME",
        action="append",
        default=[],
        help="only the table NAME (main, p_sweep, baselines, analysis, usage, few_shot, few_shot_grid, swing, "
        "kendall, by_family, "
        "paper_table1, ...; repeatable); a CSV file holds one table",
    )
    p.add_argument(
        "--by",
        choices=("family", "category", "observed"),
        action="append",
        default=[],
        help="add a breakdown: by family, by the broken start's label (category), or by the category its "
        "validation on the session's GPU observed (observed: the corrected label of a relabelled task)",
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
    p.add_argument(
        "--gate",
        type=float_in(0, MAX_GATE),
        metavar="P",
        help="re-score every run at speedup gate P (after the run; imported harness runs included); an "
        "in-loop gate decided where its trajectories stopped, so such a protocol keeps its own",
    )
    p.add_argument(
        "--paper",
        action="store_true",
        help="print the paper's Table 1 and Table 2 (with departures) instead of beavertui's tables; "
        "--json always carries them under paper_tables",
    )
    p.add_argument("--card", type=Path, help="also write the evaluation card (Markdown) to this file")
    p.add_argument(
        "--plots",
        type=given_path,
        help="also write the figures into this folder: p_sweep.svg, swing.svg, stagnation_modes.svg, "
        "speedups.svg, levels.svg, ranks.svg",
    )
    p.add_argument(
        "--resamples",
        type=int_in(MIN_RESAMPLES, MAX_RESAMPLES),
        default=1000,
        help="bootstrap resamples (default 1000)",
    )
    p.add_argument(
        "--seed", type=int_in(0, MAX_SEED), default=None, help="bootstrap seed (default: a fixed seed)"
    )
    p.add_argument(
        "--tui", action="store_true", help="show the tables, the p-sweep curves and the swing bars on screen"
    )
    p.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from beavertui import __version__
    from beavertui.commands.formats import output_format
    from beavertui.engine.errors import BeaverError
    from beavertui.service.metrics import NO_CODE, compute, figures, left_out_lines, with_tables

    fmt = output_format(args)
    if args.plots is not None and args.plots.exists() and not args.plots.is_dir():
        raise BeaverError(f"--plots {args.plots}: is a file; --plots takes a folder to write the plots into")
    from beavertui.service.outputs import check_output

    if args.output is not None and not args.output.is_dir():
        check_output(args.output, args.source, "-o")
    if args.card is not None:
        check_output(args.card, args.source, "--card")
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
        gate=args.gate,
    )
    groups, sw, kt, cells = report.groups, report.swing, report.kendall, report.cells
    for line in report.notes():
        print(f"beavertui: {line}", file=sys.stderr)
    st = report.stats
    for line in left_out_lines(st):
        print(f"beavertui: {line}", file=sys.stderr)
    if st is not None and st.unspeeded:
        print(f"beavertui: {len(st.unspeeded)} correct attempt(s) without a speedup:", file=sys.stderr)
        for model, task, it, why in st.unspeeded[:50]:
            print(f"  {model} {task} attempt {it}: {why}", file=sys.stderr)
        if len(st.unspeeded) > 50:
            print(f"  ... and {len(st.unspeeded) - 50} more (--json lists them all)", file=sys.stderr)
    if fmt == "json":
        from beavertui.engine.metrics.bootstrap import SEED
        from beavertui.reports.render import table_json

        seed = SEED if args.seed is None else args.seed
        with_tables(report, resamples=args.resamples, seed=seed, by=args.by)
        doc: dict[str, Any] = {
            "groups": [
                {
                    **_group_json(g, cells, args.resamples, seed, r),
                    "against": _against_json(g, report.against),
                }
                for g, r in zip(groups, report.rates, strict=True)
            ],
            "interval": {
                "level": 0.95,
                "method": "percentile bootstrap over tasks",
                "resamples": args.resamples,
                "seed": seed,
            },
            "tables": [table_json(t) for t in _chosen(report.tables, args.table)],
            "swing": sw,
            "kendall_tau": kt,
            "paper_tables": report.paper.as_json(),
        }
        if report.gate is not None:
            doc["gate"] = report.gate
        if report.repeated_arms:
            doc["repeated_arms_left_out"] = report.repeated_arms
        if report.usage is not None:
            doc["usage"] = _usage_json(report.usage)
        if st is not None:
            doc["unfinished_sessions"] = st.unfinished_sessions
            doc["unfinished_included"] = st.unfinished_included
            doc["resume"] = [f"beavertui batch --resume {d}" for d in st.resume_dirs()]
            doc["cut_sessions"] = len(st.cut_sessions)
            doc["cut_attempts_left_out"] = st.cut_attempts
            doc["stopped_sessions"] = len(st.stopped_sessions)
            doc["stopped_attempts_left_out"] = st.stopped_attempts
            doc["withdrawn_sessions"] = st.withdrawn_sessions
            doc["withdrawn_tasks"] = dict(sorted(st.withdrawn.items()))
            doc["timings_pending"] = st.timings_pending
            doc["final"] = (
                st.timings_pending == 0 and st.unfinished_sessions == 0 and not st.cut_sessions
                and not st.stopped_sessions
            )  # fmt: skip
            doc["unusable_sessions"] = st.unusable_sessions
            doc["unusable_tasks"] = dict(sorted(st.unusable.items()))
            doc["excluded_tasks"] = dict(sorted(st.excluded.items()))
            doc["unrecorded_attempts"] = st.unrecorded_attempts
            doc["left_out"] = list(st.damaged)
            doc["shared_run_ids"] = dict(sorted(st.shared_run_ids.items()))
            doc["unspeeded_attempts"] = [
                {"model": m, "task_id": t, "iteration": i, "reason": why} for m, t, i, why in st.unspeeded
            ]
        _emit(json.dumps(doc, indent=None, allow_nan=False), args.output)
        return 0
    from beavertui.reports import render

    with_tables(
        report, resamples=args.resamples, seed=args.seed, by=args.by, paper=args.paper, machine=fmt == "csv"
    )
    report.tables = _chosen(report.tables, args.table)
    if cells is None and not args.tui:
        print(f"beavertui: {NO_CODE}", file=sys.stderr)
    if args.card:
        from beavertui.reports.card import card

        _write(
            args.card, card(args.source, groups, __version__, report.usage, report.headers, report.notes())
        )
    if args.plots:
        from beavertui.reports.svg import p_sweep_svg, swing_svg

        args.plots.mkdir(parents=True, exist_ok=True)
        _write(args.plots / "p_sweep.svg", p_sweep_svg(groups))
        _write(args.plots / "swing.svg", swing_svg(sw))
        for name, svg in figures(report):
            _write(args.plots / name, svg)
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
    elif fmt == "csv" and args.output is not None and _is_folder(args.output, report.tables):
        _write_folder(args.output, render.csv_files(report.tables))
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


#: Why a table that --table may name is absent from a source's metrics.
ABSENT: dict[str, str] = {
    "baselines": "no session of the source recorded named baselines in its header, none being stored for its "
    "task on its GPU when it started (beavertui corpus baselines records them; docs/metrics.md, Baselines)",
    "usage": "no reply reported tokens or cost",
}


def _chosen(tables: list[Any], names: list[str]) -> list[Any]:
    """The tables named by --table, in the order given (all of them without --table)."""
    from beavertui.engine.errors import BeaverError

    if not names:
        return tables
    by = {t.slug: t for t in tables}
    unknown = [n for n in names if n not in by]
    if unknown:
        why = ABSENT.get(unknown[0])
        raise BeaverError(
            f"--table {unknown[0]}: no such table here{f': {why}' if why else ''} (tables: {', '.join(by)})"
        )
    return [by[n] for n in dict.fromkeys(names)]


def _is_folder(output: Path, tables: list[Any]) -> bool:
    """Whether -o names a folder for one CSV per table: an existing folder, or a name without .csv when
    there are several tables (a .csv name then is an error: a CSV file holds one table)."""
    from beavertui.engine.errors import BeaverError

    if output.is_dir():
        return True
    if output.suffix.lower() != ".csv":
        return len(tables) > 1
    if len(tables) > 1:
        raise BeaverError(
            f"{output}: a CSV file holds one table and there are {len(tables)}: pick one with --table NAME, "
            "or give -o a folder for one CSV file per table"
        )
    return False


def _write_folder(folder: Path, files: dict[str, str]) -> None:
    from beavertui.engine.errors import BeaverError

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BeaverError(f"{folder}: {exc.strerror}") from None
    for name, text in files.items():
        _write(folder / name, text)
    print(f"beavertui: wrote {len(files)} CSV file(s) to {folder}: {', '.join(files)}", file=sys.stderr)


def _against_json(g: Any, against: list[tuple[str, Any]]) -> dict[str, Any]:
    """A group's rates against each named baseline its sessions recorded (docs/metrics.md, Baselines):
    baseline name -> n_tasks, pass@1, pass@k (with pass@k_lower_bound: true where the loop stopped at the
    first attempt at p x the reference), degenerate_rate_raw and degenerate_raw_noise_floor (null for the
    roofline; the floor null where the speedups carry no interval); empty without."""
    out: dict[str, Any] = {}
    p = g.protocol
    stopped = p.in_loop and not p.continue_after_pass and p.method != "repeated"
    for name, b in against:
        if (b.model, b.corpus, b.protocol) == (g.model, g.corpus, g.protocol):
            out[name] = {
                "n_tasks": b.n_tasks,
                "pass@1": b.pass_at_1,
                "pass@k": b.pass_at_k,
                "pass@k_lower_bound": stopped and name != "reference",
                "degenerate_rate_raw": None if name == "roofline" else b.degenerate_rate_raw,
                "degenerate_raw_noise_floor": None if name == "roofline" else b.degenerate_raw_noise_floor,
            }
    return out


def _group_json(
    g: Any,
    cells: dict[Any, Any] | None,
    resamples: int = 1000,
    seed: int | None = None,
    group_rates: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """docs/metrics.md's group object plus the analysis keys (null when the source carries no code), and
    ``intervals``: the 95% interval of every rate the tables print, as [low, high] fractions."""
    from beavertui.engine.metrics.bootstrap import SEED, intervals
    from beavertui.engine.metrics.groups import group_key
    from beavertui.reports.tables import rates

    seed = SEED if seed is None else seed
    doc: dict[str, Any] = g.as_json()
    ivs = _intervals(group_rates if group_rates is not None else rates(g, resamples, seed))
    c = None if cells is None else cells.get(group_key(g.model, g.protocol.as_dict(), g.corpus))
    num = c.nums.sum(axis=0) if c is not None and len(c.tasks) else None
    den = c.dens.sum(axis=0) if c is not None and len(c.tasks) else None
    iv = None
    if c is not None and num is not None:
        import numpy as np

        iv = intervals(np.zeros((len(c.tasks), 0)), c.nums, c.dens, resamples, seed, tasks=c.tasks)
    for j, key in enumerate(("edit_precision", "bug_recall", "code_degenerate_rate")):
        doc[key] = float(num[j] / den[j]) if num is not None and den is not None and den[j] > 0 else None
        ivs[key] = None
        if iv is not None and doc[key] is not None:
            lo, hi = float(iv.ratio_lo[j]), float(iv.ratio_hi[j])
            ivs[key] = None if lo != lo or hi != hi else [lo, hi]
    doc["intervals"] = ivs
    doc["analysed_repairs"] = None if cells is None else (c.analysed_repairs if c is not None else 0)
    doc["unscored_repairs"] = None if cells is None else (c.unscored_repairs if c is not None else 0)
    return doc


def _intervals(r: dict[str, Any]) -> dict[str, Any]:
    """{key of the group object: [lo, hi] or null}; the p sweep's under ``p_sweep`` by p."""
    from beavertui.engine.metrics.registry import METRICS

    keys = {m.rate: m.key for m in METRICS if m.rate is not None and m.key is not None}
    out: dict[str, Any] = {"p_sweep": {}}
    for name, rate in r.items():
        iv = None if rate.lo is None or rate.hi is None else [rate.lo, rate.hi]
        if name.startswith("p") and name[1:2].isdigit():
            out["p_sweep"][name[1:]] = iv
        else:
            out[keys.get(name, name)] = iv
    return out


def _usage_json(usage: dict[Any, Any]) -> list[dict[str, Any]]:
    """Per group: model, protocol, sessions, repaired, the summed usage, cost per session and per repair."""
    out = []
    for (model, _corpus, protocol), g in usage.items():
        out.append(
            {
                "model": model,
                "protocol": protocol.as_dict(),
                "sessions": g.sessions,
                "repaired": g.repaired,
                **g.usage.model_dump(),
                # null, not 0, where no reply with token counts gave a reasoning count (docs/costs.md)
                "reasoning_tokens": g.usage.reasoning_tokens if g.usage.reasoning_reported else None,
                "cost_per_session_usd": g.cost_per_session,
                "cost_per_repair_usd": g.cost_per_repair,
                "unpriced": g.unpriced,
                "cost_is_lower_bound": g.partial_cost,
            }
        )
    return out


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        _write(output, text if text.endswith("\n") else text + "\n")


def _write(path: Path, text: str) -> None:
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.fileio import write_atomic

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise BeaverError(f"{path}: {exc.strerror}") from None
