"""A virtual table for the browser: renders only the visible lines, so 10,000 rows cost nothing to add,
sort or filter (Textual's DataTable measures every cell of every added row, seconds at that size).

The table shows a list of rows handed to it; it knows nothing of sessions. Each row is a list of
(text, style) cells; columns have fixed widths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cell = tuple[str, str]
"""(text, rich style string)."""


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int
    right: bool = False


class VirtualTable(ScrollView, can_focus=True):
    """Rows of cells with a cursor; Enter posts Selected with the row's key."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "to(0)", "Top", show=False),
        Binding("end", "to(-1)", "Bottom", show=False),
        Binding("enter", "select", "Open"),
    ]

    cursor: reactive[int] = reactive(0)

    class Selected(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    class CursorMoved(Message):
        """The cursor is on another row (or the rows changed under it)."""

    def __init__(self, columns: Sequence[Column], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self.keys: list[str] = []
        self.cells: list[list[Cell]] = []
        self._styles: dict[str, Style] = {}

    # ------------------------------------------------------------------ data

    def set_rows(self, keys: list[str], cells: list[list[Cell]]) -> None:
        """Replace every row (keeps the cursor on the same key when it is still there)."""
        current = self.current_key
        self.keys, self.cells = keys, cells
        width = sum(c.width + 1 for c in self.columns) + 1
        self.virtual_size = Size(width, len(keys))
        index = {k: i for i, k in enumerate(keys)}.get(current or "", 0) if current else 0
        self.cursor = min(index, max(0, len(keys) - 1))
        self.refresh()

    def update_row(self, key: str, cells: list[Cell]) -> bool:
        try:
            i = self.keys.index(key)
        except ValueError:
            return False
        self.cells[i] = cells
        self.refresh()
        return True

    def append_rows(self, keys: list[str], cells: list[list[Cell]]) -> None:
        self.keys += keys
        self.cells += cells
        self.virtual_size = Size(self.virtual_size.width, len(self.keys))
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self.keys)

    @property
    def current_key(self) -> str | None:
        return self.keys[self.cursor] if 0 <= self.cursor < len(self.keys) else None

    def row_text(self, i: int) -> str:
        return " ".join(text for text, _ in self.cells[i])

    # ------------------------------------------------------------------ rendering

    def _style(self, spec: str) -> Style:
        style = self._styles.get(spec)
        if style is None:
            style = self._styles[spec] = Style.parse(spec) if spec else Style()
        return style

    def header_line(self) -> str:
        return " " + "".join(
            (c.label.rjust(c.width) if c.right else c.label.ljust(c.width))[: c.width] + " "
            for c in self.columns
        )

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.size.width
        if i >= len(self.keys):
            return Strip.blank(width)
        selected = i == self.cursor
        base = self._style("reverse bold" if selected and self.has_focus else ("reverse" if selected else ""))
        if not selected and i % 2:
            base = self._style("on #1c1c1c")
        segments = [Segment(" ", base)]
        for col, (text, spec) in zip(self.columns, self.cells[i], strict=False):
            cell = (text.rjust(col.width) if col.right else text.ljust(col.width))[: col.width]
            segments.append(Segment(cell, base + self._style(spec) if not selected else base))
            segments.append(Segment(" ", base))
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, base)

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self._keep_visible()
        self.post_message(self.CursorMoved())

    def _keep_visible(self) -> None:
        h = self.scrollable_content_region.height or self.size.height
        if h <= 0:
            return
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + h:
            self.scroll_to(y=self.cursor - h + 1, animate=False)

    # ------------------------------------------------------------------ actions

    def action_move(self, delta: int) -> None:
        if self.keys:
            self.cursor = max(0, min(len(self.keys) - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 1))

    def action_to(self, where: int) -> None:
        if self.keys:
            self.cursor = 0 if where == 0 else len(self.keys) - 1

    def action_select(self) -> None:
        key = self.current_key
        if key is not None:
            self.post_message(self.Selected(key))

    def on_click(self, event: events.Click) -> None:
        i = round(self.scroll_y) + event.y
        if 0 <= i < len(self.keys):
            if i == self.cursor and event.chain >= 2:
                self.action_select()
            self.cursor = i
