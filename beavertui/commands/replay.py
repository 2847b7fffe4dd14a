"""`beavertui replay SESSION [--follow]`: step through a saved session, or one still being written."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from beavertui.commands.paths import session_path


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("replay", help="step through a saved session (or follow one being written)")
    p.add_argument(
        "session", type=session_path, help="a session file (.jsonl; demo:NAME: a bundled demo session)"
    )
    p.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep reading events appended to the file (stdout not a terminal: one line an event as it "
        "arrives, until the session's end line)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import SessionFileError
    from beavertui.engine.session.store import SessionReader

    path: Path = args.session
    if args.follow and not sys.stdout.isatty():
        return follow_lines(path)
    if not os.path.lexists(path) and not args.follow:
        raise SessionFileError(f"{path}: no such session file")
    reader = SessionReader(path) if os.path.lexists(path) else None
    header = reader.header if reader is not None else None
    if header is None and not args.follow:
        problem = reader.problem if reader is not None else "not written yet"
        raise SessionFileError(f"{path}: not a readable session ({problem})")
    if not sys.stdout.isatty():
        from beavertui.tui.summary import print_summary

        if header is None or reader is None:
            raise SessionFileError(f"{path}: not a readable session (not written yet)")
        events = reader.read()
        print_summary(header, events, reader.problem)
        return 0
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.session_screen import SessionScreen

    follow = path if args.follow else None
    if header is None or reader is None:
        header, events, problem = wait_for_header(path)
        first = lambda: SessionScreen(header, events, problem=problem, follow=follow, path=path)  # noqa: E731
    else:  # the screen reads the file in steps, so a large one paints at once
        first = lambda: SessionScreen(header, reader=reader, follow=follow, path=path)  # noqa: E731
    BeaverApp(first).run()
    return 0


def follow_lines(path: Path, poll_ms: int = 200) -> int:
    """``replay --follow`` piped: one line a session event as it is appended (what ``live --headless``
    prints), from the header to the session's end line, then exit 0. Bounded as the session screen's
    follow: a bad line, a file grown past a session's 64 MiB or a header past its bound ends it with one
    line (exit 2), after the lines whole within the bound; a file not written yet is waited for."""
    from beavertui.console import EventPrinter
    from beavertui.engine.errors import SessionFileError
    from beavertui.engine.session.events import SessionEnd
    from beavertui.engine.session.store import follow

    if not os.path.lexists(path):
        print(f"beavertui: waiting for {path} to be written (ctrl+c to give up)", file=sys.stderr)
    printer = EventPrinter(sys.stdout, color=False)
    ended = False
    try:
        for item in follow(path, poll_ms=poll_ms):
            printer.show(item)
            sys.stdout.flush()  # a pipe sees each line as it arrives, not when a buffer fills
            ended = isinstance(item, SessionEnd)
    finally:
        printer.close()
    if not ended:  # follow ends only at the end line, on an error, or when stopped
        raise SessionFileError(f"{path}: stopped following before the session's end line")
    return 0


def wait_for_header(path: Path, poll_s: float = 0.2):  # type: ignore[no-untyped-def]
    """Block until a session file being created has its header line (follow mode on a new file)."""
    import time

    from beavertui.engine.session.store import read_session

    print(f"beavertui: waiting for {path} to be written (ctrl+c to give up)", file=sys.stderr)
    while True:
        if path.exists():
            header, events, problem = read_session(path)
            if header is not None:
                return header, events, problem
        time.sleep(poll_s)
