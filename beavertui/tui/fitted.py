"""Report tables drawn as the command line prints them: fitted to the widget's width by reports/fit.py.

Whole when the columns fit, wrapped at words when they can shrink, one block per row when they cannot;
never a word cut. The layout is redone when the width changes, and cached per width.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from beavertui.reports.fit import MIN_WIDTH, rich_text


class FittedTables(Widget):
    """Some report tables (reports.tables.Table), as tall as their fitted lines."""

    DEFAULT_CSS = """
    FittedTables {
        height: auto;
    }
    """

    def __init__(self, tables: Sequence[Any] = (), *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tables: list[Any] = list(tables)
        self._cache: dict[int, Text] = {}

    def set_tables(self, tables: Sequence[Any]) -> None:
        self.tables = list(tables)
        self._cache.clear()
        self.refresh(layout=True)

    def text(self, width: int) -> Text:
        """The tables fitted to ``width`` columns (at least fit.MIN_WIDTH)."""
        width = max(MIN_WIDTH, width)
        got = self._cache.get(width)
        if got is None:
            got = self._cache[width] = rich_text(self.tables, width) if self.tables else Text()
        return got

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.text(width).plain.splitlines()) if self.tables else 0

    def render(self) -> Text:
        return self.text(self.size.width)
