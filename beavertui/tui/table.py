"""A virtual table for the browser: renders only the visible lines, so 10,000 rows cost nothing to add,
sort or filter (Textual's DataTable measures every cell of every added row, seconds at that size).

The table shows a list of rows handed to it; it knows nothing of sessions. Each row is a list of
(text, style) cells; columns have fixed widths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
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
    """Its width at the least (the table's width when the screen has no room to spare)."""
    right: bool = False
    grow: bool = False
    """Takes a share of the screen's spare width, up to its longest cell."""
    cut_left: bool = False
    """A cell too long for the column loses its start, not its end (``…ab.jsonl``)."""

    def show(self, text: str) -> str:
        """The cell as this column shows it: cut to the width, padded to it."""
        if len(text) > self.width:
            text = "…" + text[len(text) - self.width + 1 :] if self.cut_left else text[: self.width]
        return text.rjust(self.width) if self.right else text.ljust(self.width)


def fit_columns(columns: Sequence[Column], longest: Sequence[int], width: int) -> list[Column]:
    """The columns widened to use ``width``: the spare room beyond their least widths shared among the
    growing columns by how much each lacks (its longest cell or label minus its width), none past its
    longest. With no room to spare the least widths stay, and the table scrolls sideways."""
    out = list(columns)
    spare = width - (sum(c.width + 1 for c in columns) + 1)
    lacks = {
        i: max(n, len(c.label)) - c.width
        for i, (c, n) in enumerate(zip(columns, longest, strict=True))
        if c.grow and max(n, len(c.label)) > c.width
    }
    while spare > 0 and lacks:
        total = sum(lacks.values())
        given = 0
        for i, lack in list(lacks.items()):
            add = min(lack, max(1, spare * lack // total))
            add = min(add, spare - given)
            if add <= 0:
                break
            out[i] = replace(out[i], width=out[i].width + add)
            given += add
            lacks[i] -= add
            if lacks[i] <= 0:
                del lacks[i]
        spare -= given
        if given == 0:
            break
    return out


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
        Binding("left", "column(-1)", "Column left", show=False),
        Binding("right", "column(1)", "Column right", show=False),
    ]

    cursor: reactive[int] = reactive(0)

    class Selected(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    class CursorMoved(Message):
        """The cursor is on another row (or the rows changed under it)."""

    class ColumnsChanged(Message):
        """The columns took other widths (the screen was resized, or longer cells came)."""

    def __init__(self, columns: Sequence[Column], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.base = list(columns)
        """The columns at their least widths."""
        self.columns = list(columns)
        """The columns as drawn: the least widths, grown to the screen's width (fit_columns)."""
        self.keys: list[str] = []
        self.cells: list[list[Cell]] = []
        self.longest = [0] * len(self.base)
        """Per column, its longest cell so far."""
        self._styles: dict[str, Style] = {}

    def _measure(self, cells: list[list[Cell]]) -> None:
        longest = self.longest
        for row in cells:
            for k, (text, _) in enumerate(row[: len(longest)]):
                if len(text) > longest[k]:
                    longest[k] = len(text)
        self._fit()

    def _fit(self) -> None:
        width = self.scrollable_content_region.width  # the rows' room: not under the vertical scrollbar
        columns = fit_columns(self.base, self.longest, width) if width else list(self.base)
        if columns != self.columns:
            self.columns = columns
            self.refresh()
            self.post_message(self.ColumnsChanged())
        size = Size(self.line_width, len(self.keys))
        if size != self.virtual_size:
            self.virtual_size = size

    def on_resize(self, event: events.Resize) -> None:
        self._fit()

    # ------------------------------------------------------------------ data

    def set_rows(self, keys: list[str], cells: list[list[Cell]]) -> None:
        """Replace every row (keeps the cursor on the same key when it is still there)."""
        current = self.current_key
        self.keys, self.cells = keys, cells
        self.longest = [0] * len(self.base)
        self._measure(cells)
        self.virtual_size = Size(self.line_width, len(keys))
        index = {k: i for i, k in enumerate(keys)}.get(current or "", 0) if current else 0
        self.cursor = min(index, max(0, len(keys) - 1))
        self.refresh()

    def update_row(self, key: str, cells: list[Cell]) -> bool:
        try:
            i = self.keys.index(key)
        except ValueError:
            return False
        self.cells[i] = cells
        self._measure([cells])
        self.refresh()
        return True

    def append_rows(self, keys: list[str], cells: list[list[Cell]]) -> None:
        self.keys += keys
        self.cells += cells
        self._measure(cells)
        self.virtual_size = Size(self.line_width, len(self.keys))
        self.refresh()

    @property
    def line_width(self) -> int:
        """The width of a row as drawn: wider than the table where the least widths do not fit, and then
        the table scrolls sideways (left and right, a column at a time)."""
        return sum(c.width + 1 for c in self.columns) + 1

    @property
    def row_count(self) -> int:
        return len(self.keys)

    @property
    def current_key(self) -> str | None:
        return self.keys[self.cursor] if 0 <= self.cursor < len(self.keys) else None

    def row_text(self, i: int) -> str:
        """The row as drawn, each cell cut to its column, without the padding at the end."""
        return " ".join(
            c.show(text) for c, (text, _) in zip(self.columns, self.cells[i], strict=False)
        ).rstrip()

    # ------------------------------------------------------------------ rendering

    def _style(self, spec: str) -> Style:
        style = self._styles.get(spec)
        if style is None:
            style = self._styles[spec] = Style.parse(spec) if spec else Style()
        return style

    def header_line(self) -> str:
        """The column titles, scrolled sideways as the rows are."""
        return (" " + "".join(c.show(c.label) + " " for c in self.columns))[round(self.scroll_x) :]

    def watch_scroll_x(self, old: float, new: float) -> None:
        super().watch_scroll_x(old, new)
        if round(old) != round(new):
            self.post_message(self.ColumnsChanged())

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
            cell = col.show(text)
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

    def action_column(self, direction: int) -> None:
        """Scroll sideways to the start of the next column to the right (or left)."""
        starts, x = [], 0
        for c in self.columns:
            starts.append(x)
            x += c.width + 1
        now = round(self.scroll_x)
        ahead = [s for s in starts if s > now] if direction > 0 else [s for s in starts if s < now]
        if ahead:
            target = ahead[0] if direction > 0 else ahead[-1]
            self.scroll_to(x=min(target, self.max_scroll_x), animate=False)

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
