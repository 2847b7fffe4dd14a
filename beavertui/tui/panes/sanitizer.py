"""The sanitizer pane: compute-sanitizer records of the current attempt, grouped by tool and kind."""

from __future__ import annotations

from collections import defaultdict

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from beavertui.engine.session.describe import duration_text, stage_status
from beavertui.engine.session.events import SanitizerRecord
from beavertui.tui.caps import ITEMS, cap_items, cap_line
from beavertui.tui.panes.base import Pane
from beavertui.tui.style import short_kernel
from beavertui.tui.view import View

ROWS_PER_KIND = 8
KINDS = 12
"""Kinds of finding shown per run (the rest are counted)."""
CELL = 200
"""Characters of one table cell."""


class SanitizerPane(Pane):
    TITLE = "Sanitizer"

    def render_key(self, view: View) -> tuple[object, ...]:
        return (view.state.events, view.cursor, view.sanitizer_tool)

    def subtitle(self, view: View) -> str:
        return f"s: {view.sanitizer_tool or 'all tools'}"

    def render_view(self, view: View) -> RenderableType:
        a = view.attempt
        if a is None:
            return Text("No attempt yet.", style="dim")
        runs = [s for s in a.sanitize if view.sanitizer_tool in (None, s.tool)]
        if not runs:
            which = view.sanitizer_tool or "compute-sanitizer"
            ran = ", ".join(sorted({s.tool for s in a.sanitize}))
            extra = f" (ran: {ran}; s cycles tools)" if ran else ""
            return Text(f"No {which} run on iteration {a.iteration}{extra}.", style="dim italic")
        parts: list[RenderableType] = []
        shown, more_runs = cap_items(runs, ITEMS)
        for run in shown:
            head = Text(f"{run.tool}", style="bold")
            count = "no summary" if run.error_count is None else f"{run.error_count} errors"
            head.append(
                f"  {stage_status(run.result)} · {count} · {duration_text(run.result, 1)}", style="dim"
            )
            parts.append(head)
            if not run.records:
                parts.append(Text("   no findings\n", style="green"))
                continue
            groups: dict[str, list[SanitizerRecord]] = defaultdict(list)
            for r in run.records:
                groups[r.kind].append(r)
            kinds = list(groups.items())
            for kind, recs in kinds[:KINDS]:
                size = f" of size {recs[0].size}" if recs[0].size else ""
                parts.append(Text(f" {cap_line(kind, CELL)}{size} ×{len(recs)}", style="bold red"))
                table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False, header_style="dim")
                for col in ("kernel", "thread", "block", "address", "host frame"):
                    table.add_column(col, overflow="fold")
                for r in recs[:ROWS_PER_KIND]:
                    table.add_row(
                        *(
                            cap_line(cell, CELL)
                            for cell in (
                                short_kernel(r.kernel),
                                r.thread or "",
                                r.block or "",
                                r.address or "",
                                r.host_frame or "",
                            )
                        )
                    )
                parts.append(table)
                details = sorted({r.detail for r in recs[:1000] if r.detail})  # of the first 1,000
                for d in details[:3]:
                    parts.append(Text(f"   {cap_line(d, 500)}", style="italic"))
                if len(recs) > ROWS_PER_KIND:
                    parts.append(Text(f"   … and {len(recs) - ROWS_PER_KIND} more", style="dim"))
            if len(kinds) > KINDS:
                parts.append(Text(f" … {len(kinds) - KINDS:,} more kinds of finding", style="dim"))
            parts.append(Text(""))
        if more_runs:
            parts.append(Text(f"… {more_runs:,} more runs not shown", style="bold yellow"))
        return Group(*parts)
