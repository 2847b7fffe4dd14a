"""The batch progress, as a table and as a line: one row per (model, protocol) with done, passed, running
and ETA, and the totals in one line.

They only read the tracker and print nothing: the CLI's display (commands/batch_progress.py) and the TUI's
batch dashboard show them.
"""

from __future__ import annotations

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
