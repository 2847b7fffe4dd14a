"""The browser: a table of every session under a folder, sortable and filterable, updating while a
batch writes into it; Enter opens a session.

Rows come from service.catalog.read_row (the session reader of replay and metrics, the whole file
validated), read in a thread worker in chunks so the table paints at once and fills in; a watchfiles worker re-reads files that change. The table renders only
the visible lines (table.py), so 10,000 rows stay cheap to add, sort and filter.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Static

from beavertui.engine.session.usage import dollars, tokens_text
from beavertui.service.catalog import (
    FILTER_KEYS,
    Row,
    is_session_file,
    parse_filter,
    read_row,
    session_files,
    unknown_keys,
)
from beavertui.tui.caps import cap_line
from beavertui.tui.footer import Footer
from beavertui.tui.style import SHORT, STOP_COLOUR, colour, speed
from beavertui.tui.table import Cell, Column, VirtualTable

FIRST_CHUNK = 60
"""Rows in the first batch: a screenful, so the table shows sessions as soon as possible."""
CHUNK = 500
COLUMNS: tuple[Column, ...] = (
    Column("file", "File", 20, grow=True, cut_left=True),
    Column("task", "Task", 19, grow=True),
    Column("model", "Model", 13, grow=True),
    Column("protocol", "Protocol", 14, grow=True),
    Column("outcome", "Outcome", 10),
    Column("iterations", "Iter", 5, right=True),
    Column("best", "Best", 6, right=True),
    Column("stop", "Stop reason", 14, grow=True),
    Column("category", "Last cat.", 9),
    Column("tokens", "Tokens", 6, right=True),
    Column("cost", "Cost", 7, right=True),
)
"""The least widths: at 120 columns every column up to the last category shows; cut cells are whole in the
detail line. A wider screen widens file, task, model, protocol and stop reason up to their longest cell."""
LABELS = {c.key: c.label for c in COLUMNS}
OUTCOME_STYLE = {
    "success": "bold green",
    "failed": "red",
    "running": "yellow",
    "incomplete": "magenta",
    "damaged": "bold magenta",
}


def sort_key(column: str):  # type: ignore[no-untyped-def]
    if column == "file":
        return lambda r: r.path
    if column == "best":
        return lambda r: -1.0 if r.best is None else r.best
    if column == "iterations":
        return lambda r: r.iterations
    if column in ("tokens", "cost"):
        return lambda r: -1.0 if getattr(r, column) is None else getattr(r, column)
    return lambda r: (str(getattr(r, column)).lower(), r.path)


def file_name(r: Row, root: Path | None = None) -> str:
    """The session file as the browser names it: its path under the folder browsed (else its name)."""
    try:
        return str(Path(r.path).relative_to(root)) if root is not None else Path(r.path).name
    except ValueError:
        return Path(r.path).name


def cells(r: Row, root: Path | None = None) -> list[Cell]:
    return [
        (file_name(r, root), "dim"),
        (r.task, "bold"),
        (r.model, ""),
        (r.protocol, "dim"),
        (r.outcome, OUTCOME_STYLE.get(r.outcome, "")),
        (f"{r.iterations}/{r.budget}", ""),
        (speed(r.best), "green" if r.outcome == "success" else ""),
        (r.stop, STOP_COLOUR.get(r.stop, "")),
        _category(r),
        ("—" if r.tokens is None else tokens_text(r.tokens), "dim" if r.cached else ""),
        ("—" if r.cost is None else dollars(r.cost), ""),
    ]


def _category(r: Row) -> Cell:
    """The last category in short, coloured as its badge; a correct attempt below the gate as a failure."""
    if not r.category:
        return ("", "")
    if r.timing_pending:
        return ("pending", f"bold {colour(r.category, pending=True)}")
    text = "gate fail" if r.below_gate else SHORT.get(r.category, r.category)
    return (text, f"bold {colour(r.category, not r.below_gate)}")


def detail(r: Row, root: Path) -> Text:
    """The row under the cursor in full: its file, protocol and how it ended, with the reader's whole
    reason for a damaged file (the table's cells are cut to their column)."""
    text = Text()
    text.append(file_name(r, root), style="bold")
    text.append(f" · {r.task} · {r.model} · {r.protocol} · {r.outcome}")
    text.append(f" · {r.stop}" if r.stop and r.stop != r.outcome else "")
    if r.problem:
        text.append(f" · {cap_line(r.problem)}", style="bold magenta")
    return text


def _unknown_message(keys: list[str]) -> str:
    names = ", ".join(f"{k}:" for k in keys)
    known = " ".join(f"{k}:" for k in FILTER_KEYS if k != "cat")
    return f"unknown filter key {names} (ignored; known: {known})"


class RowsRead(Message):
    def __init__(self, rows: list[Row], total: int, done: bool, left_out: list[str] | None = None) -> None:
        super().__init__()
        self.rows, self.total, self.done = rows, total, done
        self.left_out = left_out or []
        """Folders the walk did not enter (unreadable, too deep), one line each: sent with the last rows."""


#: Folders left out that the browser lists under its status line (then how many more).
LEFT_OUT_SHOWN = 5


class BrowserScreen(Screen[None]):
    """Every session under a run folder."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("1", "sort('task')", "Sort task", show=False),
        Binding("2", "sort('model')", "Sort model", show=False),
        Binding("3", "sort('protocol')", "Sort protocol", show=False),
        Binding("4", "sort('outcome')", "Sort outcome", show=False),
        Binding("5", "sort('iterations')", "Sort iterations", show=False),
        Binding("6", "sort('best')", "Sort best speedup"),
        Binding("7", "sort('stop')", "Sort stop reason", show=False),
        Binding("8", "sort('category')", "Sort category", show=False),
        Binding("9", "sort('cost')", "Sort cost", show=False),
        Binding("0", "sort('file')", "Sort file", show=False),
        Binding("m", "metrics", "Metrics"),
        Binding("question_mark", "help", "Help"),
    ]

    def __init__(self, root: Path, *, watch: bool = True) -> None:
        super().__init__()
        self.root = root
        self.rows: dict[str, Row] = {}
        self._cell_cache: dict[str, tuple[Row, list[Cell]]] = {}
        self.total = 0
        self.loaded = False
        self.sort_column: str | None = None
        self.reverse = False
        self.filter_text = ""
        self._watch = watch
        self._stop = threading.Event()
        self.first_rows_at: float | None = None
        self.left_out: list[str] = []
        """Folders under the root the walk did not enter, one line each (path and why)."""

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="filter: outcome:success model:gpt category:build stop:dup or any text",
            id="browser-filter",
        )
        yield Static("", id="browser-status")
        yield Static("", id="browser-left-out")
        table = VirtualTable(COLUMNS, id="sessions")
        yield Static(table.header_line(), id="browser-columns")
        yield table
        yield Static("", id="browser-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#sessions", VirtualTable).focus()
        self._status()
        self.call_after_refresh(self._read_all)  # the empty screen paints before reading competes for the GIL
        if self._watch:
            self._watch_folder()

    def on_unmount(self) -> None:
        self._stop.set()

    # ------------------------------------------------------------------ reading

    @work(thread=True, exclusive=True, group="read")
    def _read_all(self) -> None:
        left: list[str] = []
        files = list(session_files(self.root, left_out=left))
        if not files:
            self.post_message(RowsRead([], 0, True, left))
            return
        chunk: list[Row] = []
        for i, path in enumerate(files, start=1):
            if self._stop.is_set():
                return
            chunk.append(read_row(path))
            if len(chunk) >= (FIRST_CHUNK if i <= FIRST_CHUNK else CHUNK):
                self.post_message(RowsRead(chunk, len(files), i == len(files)))
                chunk = []
        self.post_message(RowsRead(chunk, len(files), True, left))

    @work(exclusive=True, group="watch")
    async def _watch_folder(self) -> None:
        import asyncio

        import watchfiles

        stop = asyncio.Event()

        async def watch_stop() -> None:
            while not self._stop.is_set():
                await asyncio.sleep(0.2)
            stop.set()

        asyncio.get_running_loop().create_task(watch_stop())
        async for changes in watchfiles.awatch(self.root, stop_event=stop, debounce=200, step=50):
            paths = sorted({self.under_root(p) for _c, p in changes if is_session_file(Path(p))})
            rows = [await asyncio.to_thread(read_row, p) for p in paths if p.is_file()]
            if rows:
                self.upsert(rows)

    def under_root(self, path: str | Path) -> Path:
        """A path the folder watcher reports (absolute) spelled as the folder walk spells it (under the root
        as given), so one file is one row: a relative root once listed every session twice."""
        path = Path(path)
        for base in (Path(os.path.abspath(self.root)), self.root.resolve()):
            try:
                return self.root / path.relative_to(base)
            except ValueError:
                continue
        return path

    def on_rows_read(self, message: RowsRead) -> None:
        self.total = message.total
        self.loaded = message.done
        self.upsert(message.rows, counting=False)
        if message.done and self.sort_column is not None:
            self.refill()
        if message.done:
            self.left_out = message.left_out
            self._left_out()
        self._status()

    def _left_out(self) -> None:
        """Each folder the walk left out, one line (``left out PATH: why``), as ``metrics`` says them."""
        lines = [f"left out {line}" for line in self.left_out[:LEFT_OUT_SHOWN]]
        if len(self.left_out) > LEFT_OUT_SHOWN:
            lines.append(f"... and {len(self.left_out) - LEFT_OUT_SHOWN} more left out")
        shown = self.query_one("#browser-left-out", Static)
        shown.update(Text("\n".join(lines)))
        shown.display = bool(lines)

    def upsert(self, rows: list[Row], *, counting: bool = True) -> None:
        """Add new rows or update changed ones, keeping the filter and the sort."""
        table = self.query_one("#sessions", VirtualTable)
        tokens = parse_filter(self.filter_text)
        new: list[Row] = []
        resort = False
        for r in rows:
            known = r.path in self.rows
            self.rows[r.path] = r
            if counting and not known:
                self.total += 1
            if known:
                resort = True  # a changed row may change membership or order
            elif r.matches(tokens):
                new.append(r)
        if resort or (new and self.sort_column is not None and self.loaded):
            self.refill()
        elif new:
            table.append_rows([r.path for r in new], [self._cells(r) for r in new])
        if new and self.first_rows_at is None:
            self.first_rows_at = time.perf_counter()
        if counting:
            self._status()

    def _cells(self, r: Row) -> list[Cell]:
        hit = self._cell_cache.get(r.path)
        if hit is None or hit[0] is not r:
            hit = self._cell_cache[r.path] = (r, cells(r, self.root))
        return hit[1]

    def _detail(self) -> None:
        key = self.query_one("#sessions", VirtualTable).current_key
        row = self.rows.get(key) if key is not None else None
        self.query_one("#browser-detail", Static).update(detail(row, self.root) if row else "")

    @on(VirtualTable.CursorMoved)
    def _cursor_moved(self) -> None:
        self._detail()

    @on(VirtualTable.ColumnsChanged)
    def _columns_changed(self) -> None:
        table = self.query_one("#sessions", VirtualTable)
        self.query_one("#browser-columns", Static).update(table.header_line())

    def refill(self) -> None:
        """Rebuild the shown rows from every row under the current filter and sort."""
        table = self.query_one("#sessions", VirtualTable)
        tokens = parse_filter(self.filter_text)
        rows = [r for r in self.rows.values() if r.matches(tokens)] if tokens else list(self.rows.values())
        if self.sort_column is not None:
            rows.sort(key=sort_key(self.sort_column), reverse=self.reverse)
        table.set_rows([r.path for r in rows], [self._cells(r) for r in rows])
        self._status()

    def _status(self) -> None:
        table = self.query_one("#sessions", VirtualTable)
        text = Text()
        text.append(f"{self.root}", style="bold")
        text.append(f" · {self.total} sessions · {table.row_count} shown")
        if not self.loaded:
            text.append(f" · reading {len(self.rows)}/{self.total or '?'}", style="yellow")
        if self.sort_column:
            label = LABELS[self.sort_column]
            text.append(f" · sorted by {label} {'↓' if self.reverse else '↑'}")
        tokens = [r.tokens for r in self.rows.values() if r.tokens is not None]
        costs = [r.cost for r in self.rows.values() if r.cost is not None]
        if tokens or costs:
            text.append(f" · {tokens_text(sum(tokens))} tokens")
            if costs:
                text.append(f", {dollars(sum(costs))}")
            cached = sum(r.cached for r in self.rows.values())
            if cached:
                text.append(f", {cached} replies from the cache")
        if self.filter_text:
            text.append(f" · filter: {self.filter_text}", style="cyan")
            unknown = unknown_keys(parse_filter(self.filter_text))
            if unknown:
                text.append(f" · {_unknown_message(unknown)}", style="bold red")
        if self.left_out:
            text.append(f" · {len(self.left_out)} folder(s) left out, below", style="yellow")
        if self.loaded and not self.rows:
            text.append(" · no session files (*.jsonl) here", style="bold red")
        self.query_one("#browser-status", Static).update(text)
        self._detail()

    # ------------------------------------------------------------------ actions

    def action_sort(self, column: str) -> None:
        if self.sort_column == column:
            self.reverse = not self.reverse
        else:
            self.sort_column, self.reverse = column, column == "best"
        self.refill()

    def on_click(self, event) -> None:  # type: ignore[no-untyped-def]
        """A click on the column titles sorts by that column (again: reverses)."""
        if event.widget is None or event.widget.id != "browser-columns":
            return
        table = self.query_one("#sessions", VirtualTable)
        x = 1 - round(table.scroll_x)
        for col in table.columns:
            if x <= event.x < x + col.width + 1:
                self.action_sort(col.key)
                return
            x += col.width + 1

    def action_filter(self) -> None:
        self.query_one("#browser-filter", Input).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#browser-filter", Input)
        if box.value:
            box.value = ""
            self.filter_text = ""
            self.refill()
        self.query_one("#sessions", VirtualTable).focus()

    @on(Input.Submitted, "#browser-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.filter_text = event.value.strip()
        unknown = unknown_keys(parse_filter(self.filter_text))
        if unknown:
            self.notify(_unknown_message(unknown), severity="warning")
        self.refill()
        self.query_one("#sessions", VirtualTable).focus()

    def action_metrics(self) -> None:
        """The metrics of the sessions under this folder: tables, p-sweep curves, swing bars."""
        from beavertui.tui.metrics_screen import MetricsScreen

        self.app.push_screen(MetricsScreen(self.root))

    def action_help(self) -> None:
        from beavertui.tui.help import HelpScreen

        self.app.push_screen(HelpScreen())

    @on(VirtualTable.Selected)
    def _row_selected(self, event: VirtualTable.Selected) -> None:
        self.open(Path(event.key))

    def open(self, path: Path) -> None:
        from beavertui.engine.errors import BeaverError
        from beavertui.engine.session.store import SessionReader
        from beavertui.tui.session_screen import SessionScreen

        try:
            reader = SessionReader(path)
        except BeaverError as exc:
            self.notify(f"{path.name}: cannot open: {str(exc).removeprefix(f'{path}: ')}", severity="error")
            return
        if reader.header is None:
            self.notify(f"{path.name}: cannot open: {reader.problem}", severity="error")
            return
        # The screen reads the file in steps; once read, it follows one that is still being written.
        self.app.push_screen(SessionScreen(reader.header, reader=reader, path=path, follow_unfinished=True))
