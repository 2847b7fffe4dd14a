"""`beavertui compare A B`: two sessions of one task side by side, iterations aligned."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from beavertui.commands.paths import session_path


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("compare", help="two sessions of one task side by side, iterations aligned")
    p.add_argument("a", type=session_path, help="first session file (demo:NAME: a bundled demo)")
    p.add_argument("b", type=session_path, help="second session file")
    p.set_defaults(func=run)


def load(path: Path):  # type: ignore[no-untyped-def]
    from beavertui.engine.errors import SessionFileError
    from beavertui.engine.session.state import fold
    from beavertui.engine.session.store import read_session

    header, events, problem = read_session(path)
    if header is None:
        raise SessionFileError(f"{path}: not a readable session ({problem})")
    if problem:
        print(f"beavertui: {path}: {problem}; comparing its valid prefix", file=sys.stderr)
    return fold(header, events)


def branch_step(path_a: Path, a, path_b: Path, b) -> int | None:  # type: ignore[no-untyped-def]
    """The step after which B branches from A (B's header names A as its parent), else None."""
    parent = b.header.parent
    if parent is None or b.header.branch_step is None:
        return None
    try:
        same = Path(parent).resolve() == path_a.resolve() or (
            not Path(parent).is_file() and Path(parent).name == path_a.name
        )
    except OSError:
        return None
    return int(b.header.branch_step) if same else None


def run(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError

    a, b = load(args.a), load(args.b)
    if a.header.task.id != b.header.task.id:
        raise BeaverError(
            f"the sessions are of different tasks ({a.header.task.id} vs {b.header.task.id}); compare needs one task"
        )
    step = branch_step(args.a, a, args.b, b)
    if not sys.stdout.isatty():
        from rich.console import Console

        from beavertui.tui.compare import aligned_table

        if step is not None:
            print(f"B is a branch of A after step {step}")
        Console(width=120).print(aligned_table(a, b, 0, step))
        return 0
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.compare import CompareScreen

    BeaverApp(lambda: CompareScreen(a, b, branch_step=step)).run()
    return 0
