"""`beavertui browse [RUN_DIR]` (and `beavertui` alone): a table of the sessions under a folder.

With no folder it opens the bundled demo sessions (sessions/demo), so the first command of the README
shows real recorded sessions on any machine, with no GPU and no API key.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def demo_dir() -> Path:
    """sessions/demo of the source checkout beside the package, else ./sessions/demo (an installed copy run
    from the repository root)."""
    here = Path(__file__).resolve().parents[2] / "sessions" / "demo"
    if here.is_dir():
        return here
    return Path.cwd() / "sessions" / "demo"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("browse", help="browse the sessions under a folder (default: the demo sessions)")
    p.add_argument("run_dir", nargs="?", type=Path, help="folder of session files (default: sessions/demo)")
    p.add_argument("--no-watch", action="store_true", help="do not update the table while files change")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError

    root: Path = args.run_dir or demo_dir()
    if not root.is_dir():
        raise BeaverError(f"{root}: no such folder of sessions")
    if not sys.stdout.isatty():
        from beavertui.tui.catalog import read_row, session_files

        for path in session_files(root):
            r = read_row(path)
            best = "—" if r.best is None else f"{r.best:.2f}x"
            stop = r.problem if r.problem else r.stop
            print(
                f"{r.task}\t{r.model}\t{r.protocol}\t{r.outcome}\t{r.iterations}/{r.budget}\t{best}\t{stop}\t{path}"
            )
        return 0
    from beavertui.tui.app import BeaverApp
    from beavertui.tui.browser import BrowserScreen

    BeaverApp(lambda: BrowserScreen(root, watch=not args.no_watch)).run()
    return 0
