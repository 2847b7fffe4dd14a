"""`beavertui export RUN_DIR [--csv] [-o FILE]`: write the attempts table of a run (docs/metrics.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write the attempts table of a run directory (JSON Lines, or CSV)",
        description="Folds every session under RUN_DIR into one row per attempt (docs/format.md). "
        "Attempts hit by an infrastructure failure are written with infra_error=true and never scored.",
    )
    p.add_argument("run_dir", type=Path, help="a run directory (sessions/<run_id>) or one session file")
    p.add_argument(
        "--csv", action="store_true", help="write CSV (protocol fields as protocol.<name> columns)"
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
    from beavertui.engine.metrics.attempts import ExportStats, SourceModels, export_rows, load_source_models
    from beavertui.engine.metrics.table_io import write_csv, write_jsonl

    sources = SourceModels(load_source_models(args.source_models) if args.source_models else None)
    stats = ExportStats()
    rows = export_rows(args.run_dir, source_models=sources, stats=stats)
    write = write_csv if args.csv else write_jsonl
    if args.output:
        try:
            with args.output.open("w", encoding="utf-8", newline="") as out:
                write(rows, out)
        except OSError as exc:
            raise BeaverError(f"{args.output}: {exc.strerror}") from None
    else:
        write(rows, sys.stdout)
    if stats.sessions == 0:
        raise BeaverError(f"{args.run_dir}: no session files found")
    print(
        f"beavertui: {stats.rows} attempts from {stats.sessions} sessions"
        f" ({stats.infra_rows} hit by infrastructure failures, excluded from scores;"
        f" {stats.unfinished_sessions} sessions unfinished; {len(stats.damaged)} unreadable files)",
        file=sys.stderr,
    )
    for line in stats.damaged[:5]:
        print(f"beavertui: skipped {line}", file=sys.stderr)
    return 0
