"""`beavertui browse [RUN_DIR]` (and `beavertui` alone): a table of the sessions under a folder.

With no folder it opens the bundled demo sessions (sessions/demo), so the first command of the README
shows real recorded sessions on any machine, with no GPU and no API key.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from beavertui.commands.paths import session_path


def demo_dir() -> Path:
    """The demo sessions shipped with beavertui (the checkout's sessions/demo, or the installed copy)."""
    from beavertui.engine import bundled

    return bundled.demo_sessions()


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("browse", help="browse the sessions under a folder (default: the demo sessions)")
    p.add_argument(
        "run_dir", nargs="?", type=session_path, help="folder of session files (default: sessions/demo)"
    )
    p.add_argument("--no-watch", action="store_true", help="do not update the table while files change")
    p.add_argument(
        "--format",
        type=str.lower,
        choices=("table", "md", "csv", "latex", "json"),
        default=None,
        help="print the sessions as a table (fitted to the terminal), md, csv, latex or json instead of "
        "opening the browser (piped with no --format: one tab-separated line per session)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError

    root: Path = args.run_dir or demo_dir()
    if root.is_file():
        hint = f": open it with beavertui replay {root}" if root.name.endswith(".jsonl") else ""
        raise BeaverError(f"{root}: is a file; browse takes a folder of sessions{hint}")
    if not root.is_dir():
        raise BeaverError(f"{root}: no such folder of sessions")
    left: list[str] = []  # folders the walk did not enter, said on stderr after the rows
    if args.format is not None:
        if not _print_table(root, args.format, left):
            print(f"beavertui: {root}: no session files", file=sys.stderr)
        say_left_out(left)
        return 0
    if not sys.stdout.isatty():
        from beavertui.service.catalog import read_row, session_files

        listed = 0
        for path in session_files(root, left_out=left):
            listed += 1
            r = read_row(path)
            best = "—" if r.best is None else f"{r.best:.2f}x"
            stop = r.problem if r.problem else r.stop
            print(
                f"{r.task}\t{r.model}\t{r.protocol}\t{r.outcome}\t{r.iterations}/{r.budget}\t{best}\t{stop}\t{path}"
            )
        if not listed:  # as the browser's status line says it; standard output stays one line a session
            print(f"beavertui: {root}: no session files", file=sys.stderr)
        say_left_out(left)
        return 0
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.browser import BrowserScreen

    BeaverApp(lambda: BrowserScreen(root, watch=not args.no_watch)).run()
    return 0


def say_left_out(left: list[str]) -> None:
    """Each folder a walk left out, one line on stderr (``left out PATH: why``), as ``metrics`` says them."""
    from beavertui.service.metrics import left_out_lines

    for line in left_out_lines(left, more=""):
        print(f"beavertui: {line}", file=sys.stderr)


def _print_table(root: Path, fmt: str, left: list[str]) -> int:
    """Print the sessions under ``root`` in ``fmt``; how many there were."""
    import json
    import os

    from beavertui.reports.cells import Table
    from beavertui.reports.render import emit
    from beavertui.service.catalog import read_row, session_files
    from beavertui.service.metrics import WithdrawnFrom

    rows = [read_row(p) for p in session_files(root, left_out=left)]
    withdrawn = WithdrawnFrom()
    gone = [withdrawn(Path(r.path), r.task) for r in rows]  # a task withdrawn from its run: in no rate
    if fmt == "json":
        for r, why in zip(rows, gone, strict=True):
            print(json.dumps({**{k: v for k, v in r.__dict__.items() if k != "mtime"}, "left_out": why}))
        return len(rows)
    cells = tuple(
        (
            r.task,
            r.model,
            r.protocol,
            r.outcome,
            f"{r.iterations}/{r.budget}",
            "-" if r.best is None else f"{r.best:.2f}x",
            # a damaged file: the reader's whole reason
            (r.problem or r.stop) + (f"; left out of every rate ({why})" if why else ""),
            os.path.relpath(r.path, root),
        )
        for r, why in zip(rows, gone, strict=True)
    )
    cols = ("task", "model", "protocol", "outcome", "iter.", "best", "stop or problem", "file")
    note = (
        "outcome: success (correct and at the protocol's gate), failed, damaged (the file is not readable "
        "whole), running or incomplete (no end line). iter.: iterations made of the budget K. best: the "
        "highest speedup of a correct attempt, the expert reference's median time over the candidate's as "
        "the timing stage measured them (x reference; - where none was timed). stop or problem: why the "
        "session stopped, or what is wrong with its file; a session of a task withdrawn from its run says it "
        "is left out of every rate."
    )
    emit([Table(f"{root}: {len(rows)} sessions", cols, cells, note=note, keys=2)], fmt)
    return len(rows)
