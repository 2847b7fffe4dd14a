"""`beavertui import RUN_DIR [--out DIR] [--corpus RELEASE]`: a CUDABeaver harness run as beavertui sessions."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "import",
        help="turn a CUDABeaver harness run directory into sessions (replay, browse, metrics)",
        description="Read a run directory of the CUDABeaver harness (index/manifest.jsonl, error_code/, "
        "build_log_raw/, config.yaml, summary.json) and write one session file per task, plus run.json "
        "naming the source. What the harness did not record (messages, time stamps, exit statuses, "
        "durations, commands, tokens) stays empty in the sessions and is listed in each header; "
        "api_error records are kept as endpoint failures and never scored.",
    )
    p.add_argument("run_dir", type=Path, help="the harness run directory (outputs/<experiment>/<stamp>)")
    p.add_argument(
        "--out", type=Path, help="folder to write (default: sessions/cudabeaver-<stamp>); must not exist"
    )
    p.add_argument(
        "--corpus",
        type=Path,
        help="the release (or its data/) holding the tasks, for their broken starts and references "
        "(default: the release around RUN_DIR, if it is still inside one)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from beavertui.service.importing import ImportOptions, import_harness_run

    result = import_harness_run(
        ImportOptions(
            run_dir=args.run_dir,
            out=args.out,
            corpus=args.corpus,
            command=(
                "beavertui",
                "import",
                str(args.run_dir),
                *(("--out", str(args.out)) if args.out else ()),
                *(("--corpus", str(args.corpus)) if args.corpus else ()),
            ),
        )
    )
    c = result.counts
    print(
        f"imported {c.sessions} session{'s' if c.sessions != 1 else ''} ({c.scored} scored attempts of "
        f"{c.records} records) from the CUDABeaver harness run {result.run.run_id} into {result.out}"
    )
    for reason, n in sorted(c.dropped.items()):
        print(f"  not scored: {n} record{'s' if n != 1 else ''}: {reason}")
    if c.missing_files:
        shown = ", ".join(c.missing_files[:3]) + (" ..." if len(c.missing_files) > 3 else "")
        print(f"  missing from the run directory: {len(c.missing_files)} files ({shown})")
    if c.tasks_without_corpus:
        print(
            f"  {len(c.tasks_without_corpus)} tasks without their broken start and reference "
            "(not in a corpus; give --corpus RELEASE)"
        )
    elif c.corpus:
        print(f"  task texts from {c.corpus}")
    print(
        "  not recorded by the harness, left empty: messages, time stamps, exit statuses, durations, "
        "commands, token counts, the GPU"
    )
    print(f"  next: beavertui metrics {result.out}   beavertui browse {result.out}")
    return 0
