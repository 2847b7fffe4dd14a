"""`beavertui reproduce`: the paper's grid (main run, repeated arm, L0-L3, H1-H4) and its tables, in one command.

What the grid is and how it runs is service/reproduce.py's; the tables are `metrics --paper`'s. This module
reads the flags, prints the plan (``--dry-run``: no network, no GPU, no key needed) and, after a run, the
paper's Table 1 and Table 2, written beside the runs as paper_tables.md, .tex and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from beavertui.commands.numbers import MAX_JOBS, GpuList, int_in


def register(sub: Any) -> None:
    p = sub.add_parser(
        "reproduce",
        help="run the paper's grid (main, repeated, L0-L3, H1-H4) over models and write its Table 1 and 2",
        description="Plans every arm the paper's axes need for each model (the main run once: L3, H4, the "
        "Iter column and the gate axis all read it), runs each model's arms as one resumable batch under "
        "--out, then writes the paper's tables. Models come as names, a protocol file's [[models]], or the CUDABeaver "
        "release's own config files (configs/iter/*.yaml and the other axes' folders), read as they are.",
    )
    p.add_argument(
        "--corpus",
        type=Path,
        help="the corpus: the CUDABeaver release, or a folder (default: $BEAVERTUI_CORPUS, else the bundled "
        "corpus, as for batch)",
    )
    p.add_argument("--models", nargs="+", default=[], metavar="MODEL", help="models under test, by name")
    p.add_argument(
        "--models-from",
        type=Path,
        metavar="FILE",
        help="a protocol file whose [[models]] are the models under test (its protocol is not used)",
    )
    p.add_argument(
        "--release-configs",
        nargs="+",
        type=Path,
        default=[],
        metavar="PATH",
        help="the release's config files or folders (e.g. configs/iter): model, endpoint variables, "
        "decoding, extra body and task list of each, read as they are",
    )
    p.add_argument(
        "--axes",
        default=",".join(("main", "repeated", "feedback", "history")),
        help="comma-separated axes to plan: main, repeated, feedback, history (default: all; the gate axis "
        "is read from the main run's p sweep)",
    )
    p.add_argument("--tasks", help="only these task ids (comma-separated globs)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("sessions") / "reproduce",
        help="folder of the runs (default sessions/reproduce)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="show the plan and its cost; run nothing, no network"
    )
    p.add_argument("--json", action="store_true", help="print the plan (dry run) or the tables as JSON")
    p.add_argument("--gpus", type=GpuList(), help="GPU indices to use, e.g. 0,1 (default: every visible GPU)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), help="most sessions in flight at once (as for batch)")
    p.add_argument(
        "--toolchain",
        default="local",
        help="local (this machine's GPUs), demo (the bundled demos' recorded outcomes) or recorded:PATH",
    )
    p.add_argument(
        "--retry-infra",
        action="store_true",
        help="when run again: also run the sessions that an infrastructure failure (endpoint, GPU, toolchain) "
        "ended after their retries, each with its run's retries anew (batch --resume --retry-infra)",
    )
    from beavertui.commands.endpoint import add_endpoint_options

    add_endpoint_options(p)
    p.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError
    from beavertui.service.environment import CORPUS_ENV, default_corpus
    from beavertui.service.reproduce import plan

    axes = [a.strip() for a in args.axes.split(",") if a.strip()]
    if args.release_configs and args.corpus is None and not os.environ.get(CORPUS_ENV, "").strip():
        raise BeaverError(
            "--release-configs names tasks of the CUDABeaver release: give --corpus with the release (or its "
            "data/ folder)"
        )
    grid = plan(
        args.corpus or default_corpus(),
        models=args.models,
        models_file=args.models_from,
        configs=args.release_configs,
        axes=axes,
        tasks=args.tasks,
    )
    if args.dry_run:
        return _show(grid, args)
    from beavertui.commands.batch_progress import display_of
    from beavertui.commands.endpoint import endpoint_overrides, models_file_of
    from beavertui.service.batch_prepare import BatchOptions
    from beavertui.service.reproduce import run

    options = BatchOptions(
        gpus=args.gpus,
        jobs=args.jobs,
        toolchain=args.toolchain,
        retry_infra=args.retry_infra,
        command=["beavertui", *sys.argv[1:]],
        goes_on=f"the beavertui reproduce command that made {args.out}, run again",
        endpoint=endpoint_overrides(args),
        models_file=models_file_of(args),
    )
    rc = run(
        grid,
        args.out,
        options,
        display=display_of(args.json),
        say=lambda line: print(f"beavertui: {line}", file=sys.stderr),
    )
    _tables(args.out, args.json)
    return rc


def _plan_json(grid: Any) -> dict[str, Any]:
    return {
        "corpus": str(grid.corpus),
        "arms": [
            {
                "model": a.model.name,
                "axis": a.axis,
                "protocol": a.protocol.key(),
                "tasks": len(grid.tasks[a.model.name]),
                "sources": list(a.sources),
            }
            for a in grid.arms
        ],
        "estimate": grid.estimate(),
        "notes": grid.notes,
    }


def _show(grid: Any, args: argparse.Namespace) -> int:
    from beavertui.service.preflight import toolchain_problem

    # the one check of the run that needs no network: a grid this machine cannot run is said before the run
    cannot = toolchain_problem(args.toolchain, [a.protocol for a in grid.arms], args.gpus)
    if args.json:
        print(json.dumps({**_plan_json(grid), "cannot_run_here": cannot}, indent=None))
        return 0
    from beavertui.reports import render
    from beavertui.reports.cells import Table

    rows = tuple(
        (
            a.model.name,
            a.axis,
            _label(a.protocol),
            str(len(grid.tasks[a.model.name])),
            str(len(grid.tasks[a.model.name]) * a.protocol.budget),
            ", ".join(Path(s).name for s in a.sources) or "-",
        )
        for a in grid.arms
    )
    est = grid.estimate()
    note = (
        f"{len(grid.arms)} arms over {len(grid.models())} model(s) in {grid.corpus}: at most {est['sessions']} "
        f"sessions, {est['model_calls']} model calls and as many judged attempts (a build, a run and, when "
        "correct, a timing each). Each arm is run once: the Iter column, L3, H4 and the gate axis all read "
        f"the main arm. Dry run: nothing was run and no network was used. Run it: drop --dry-run (results "
        f"under {args.out}, resumable)."
    )
    if cannot is not None:
        note += f"\n- this machine cannot run it with --toolchain {args.toolchain}: {cannot}"
    if grid.notes:
        note += "\n" + "\n".join(f"- {n}" for n in grid.notes)
    render.terminal(
        [
            Table(
                title="The paper's grid",
                columns=("model", "axis", "protocol", "tasks", "model calls (at most)", "release config"),
                rows=rows,
                note=note,
                keys=2,
            )
        ]
    )
    return 0


def _label(protocol: Any) -> str:
    from beavertui.engine.session.protocol import protocol_label

    return protocol_label(protocol.key())


def _tables(out: Path, as_json: bool) -> None:
    """The paper's tables of every run under ``out``: printed, and written beside the runs."""
    from beavertui.engine.fileio import write_atomic
    from beavertui.reports import render
    from beavertui.service.metrics import compute, with_tables

    report = with_tables(compute(out), paper=True)
    doc = {"paper_tables": report.paper.as_json()}
    write_atomic(out / "paper_tables.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    write_atomic(out / "paper_tables.md", render.markdown(report.tables))
    write_atomic(out / "paper_tables.tex", render.latex(report.tables))
    if as_json:
        print(json.dumps(doc, allow_nan=False))
    else:
        render.terminal(report.tables)
    print(f"beavertui: tables written to {out}/paper_tables.md, .tex and .json", file=sys.stderr)
