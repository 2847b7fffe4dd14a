"""The batch command's progress display: the table of batch/progress.py while the batch runs.

On a terminal it is a rich Live table refreshed twice a second; otherwise one summary line is printed
every ``interval`` seconds and at the end, on standard error (standard output holds the summary: --json,
--format csv), so logs of long headless runs stay readable. The service runs the batch and prints nothing;
the command chooses this display, or none (--quiet), and hands it to ``run_batch``.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from beavertui.batch.local_executor import Tracker
from beavertui.batch.progress import line, table
from beavertui.service.batch import Progress, silent


def display_of(quiet: bool) -> Progress:
    """The progress display of a batch the CLI runs: none when ``quiet``, else ``Display``."""
    return silent if quiet else Display


class Display:
    """Context manager showing progress while the batch runs."""

    def __init__(self, tracker: Tracker, parallel: int, *, live: bool | None = None, interval: float = 30.0):
        self.tracker = tracker
        self.parallel = parallel
        self.live = sys.stdout.isatty() if live is None else live
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Any = None

    def __enter__(self) -> Display:
        if self.live:
            from rich.live import Live

            self._live = Live(table(self.tracker, self.parallel), refresh_per_second=2, transient=False)
            self._live.__enter__()
            self._thread = threading.Thread(target=self._refresh, daemon=True)
        else:
            self._thread = threading.Thread(target=self._print, daemon=True)
        self._thread.start()
        return self

    def _refresh(self) -> None:
        while not self._stop.wait(0.5):
            self._live.update(table(self.tracker, self.parallel))

    def _print(self) -> None:
        # not a terminal: a line on standard error now and then, as the batch's other lines go, so that the
        # summary on standard output (--json, --format csv) stays what it says it is
        while not self._stop.wait(self.interval):
            print(line(self.tracker), file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._live is not None:
            self._live.update(table(self.tracker, self.parallel))
            self._live.__exit__(None, None, None)
        else:
            print(line(self.tracker), file=sys.stderr, flush=True)
