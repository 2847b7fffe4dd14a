"""A report table's cells and the table itself, as plain data: what render.py, fit.py and the HTML pages
draw. Apart from tables.py (which builds the metric tables with numpy), so that a command that only shows a
table (``corpus list``, the batch overview) loads no numpy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    """A fraction with its interval, all in [0, 1]; None where undefined."""

    value: float | None
    lo: float | None = None
    hi: float | None = None
    lower_bound: bool = False
    """The value is a lower bound (a p above an in-loop gate), shown with a leading ``>=``."""


Cell = str | Rate


@dataclass(frozen=True)
class Table:
    """One report table."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str = ""
    keys: int = 2
    """Leading columns that name a row (a block's heading when the table is too wide for the page)."""
    name: str = ""
    """A short stable name (``main``, ``p_sweep``...): the table's CSV file and ``--table`` choice."""

    @property
    def slug(self) -> str:
        """``name``, else the title in lower case with runs of other characters as ``_``."""
        import re

        return self.name or re.sub(r"[^a-z0-9@]+", "_", self.title.lower()).strip("_")[:60] or "table"


def pct(r: Rate) -> str:
    if r.value is None:
        return "-"
    text = (">=" if r.lower_bound else "") + f"{100 * r.value:.1f}"
    if r.lo is not None and r.hi is not None:
        text += f" [{100 * r.lo:.1f}, {100 * r.hi:.1f}]"
    return text
