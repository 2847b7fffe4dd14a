"""`beavertui compare A B`: two sessions of one task side by side, iterations aligned."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("compare", help="two sessions of one task side by side, iterations aligned")
    p.add_argument("a", type=Path, help="first session file")
    p.add_argument("b", type=Path, help="second session file")
    p.set_defaults(func=run)


def load(path: Path):  # type: ignore[no-untyped-def]
    from beavertui.engine.errors import SessionFileError
    from beavertui.engine.session import read_session
    from beavertui.engine.state import fold

    header, events, problem = read_session(path)
    if header is None:
        raise SessionFileError(f"{path}: not a readable session ({problem})")
    if problem:
        print(f"beavertui: {path}: {problem}; comparing its valid prefix", file=sys.stderr)
    return fold(header, events)


def run(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError

    a, b = load(args.a), load(args.b)
    if a.header.task.id != b.header.task.id:
        raise BeaverError(
            f"the sessions are of different tasks ({a.header.task.id} vs {b.header.task.id}); compare needs one task"
        )
    if not sys.stdout.isatty():
        from rich.console import Console

        from beavertui.tui.compare import aligned_table

        Console(width=120).print(aligned_table(a, b, 0))
        return 0
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.compare import CompareScreen

    BeaverApp(lambda: CompareScreen(a, b)).run()
    return 0
