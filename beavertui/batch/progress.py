"""The batch progress display: one row per (model, protocol) with done, passed, running and ETA.

On a terminal it is a rich Live table refreshed twice a second; otherwise one summary line is printed
every ``interval`` seconds and at the end, on standard error (standard output holds the summary: --json,
--format csv), so logs of long headless runs stay readable.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from beavertui.batch.local_executor import Tracker


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def table(tracker: Tracker, parallel: int, width: int | None = None) -> Any:
    """The progress table fitted to the terminal's width (reports/fit.py): long names wrap, headers never."""
    from beavertui.reports.cells import Table
    from beavertui.reports.fit import page_width, rich_text

    rows = []
    with tracker.lock:
        items = sorted(tracker.groups.items())
        for (model, proto), g in items:
            rate = f"{100 * g.passed / g.done:.0f}%" if g.done else "-"
            wait = f", {g.timing_pending} timing pending" if g.timing_pending > 0 else ""
            rows.append(
                (
                    model,
                    proto,
                    f"{g.done}/{g.total}",
                    f"{g.passed} ({rate}){wait}",
                    str(g.running),
                    str(g.attempts),
                    str(g.infra),
                    "done" if g.done == g.total else _eta(tracker.eta_s((model, proto), parallel)),
                )
            )
    cols = ("model", "protocol", "done", "passed", "running", "attempts", "infra", "ETA")
    return rich_text([Table("beavertui batch", cols, tuple(rows))], width or page_width())


def line(tracker: Tracker) -> str:
    t = tracker.totals()
    el = time.monotonic() - tracker.t0
    return (
        f"[{_eta(el)}] sessions {t['done']}/{t['total']} (passed {t['passed']}, running {t['running']}, "
        f"skipped {t['skipped']}, failed {t['failed']}), attempts {t['attempts']}, infra failures {t['infra']}"
        + (f", timing pending {t['timing_pending']}" if t["timing_pending"] > 0 else "")
    )


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
