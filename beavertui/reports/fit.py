"""Plain tables that fit a width: columns two spaces apart, a rule under the header, no word ever cut.

A table is printed whole when its columns fit at full width. Otherwise the widths shrink towards each
column's longest unbreakable piece (a header word, a cell word, a rate's value or its whole interval) and
cells wrap at those pieces. When even that is wider than the page, each row becomes a block: its key
columns as a heading, then one ``column  value`` line per other column. Titles and notes wrap at words.
The width is the terminal's when there is one, ``COLUMNS`` when set, else 80.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from beavertui.reports.cells import Cell, Rate, Table, pct

#: Width used when standard output is not a terminal and COLUMNS is not set.
PIPE_WIDTH = 80
GAP = 2
MIN_WIDTH = 40


def page_width(stream: IO[str] | None = None) -> int:
    """COLUMNS if set, else the terminal's width, else PIPE_WIDTH (never below MIN_WIDTH)."""
    env = os.environ.get("COLUMNS", "")
    if env.isascii() and env.isdecimal() and int(env) > 0:  # "²" is a digit int() refuses
        return max(MIN_WIDTH, int(env))
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return max(MIN_WIDTH, shutil.get_terminal_size((PIPE_WIDTH, 24)).columns)
    except (AttributeError, ValueError, OSError):
        pass
    return PIPE_WIDTH


def use_colour(stream: IO[str] | None = None) -> bool:
    """Styles only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _pieces(c: Cell) -> list[str]:
    """The unbreakable pieces of a cell, in order."""
    if isinstance(c, Rate):
        text = pct(c)
        value, sep, interval = text.partition(" ")
        return [value, interval] if sep else [value]
    return c.split() or [""]


def _wrap(pieces: Sequence[str], width: int) -> list[str]:
    lines: list[str] = []
    cur = ""
    for p in pieces:
        if not p:
            continue
        if not cur:
            cur = p
        elif len(cur) + 1 + len(p) <= width:
            cur += " " + p
        else:
            lines.append(cur)
            cur = p
    lines.append(cur)
    return lines


@dataclass(frozen=True)
class Line:
    """One printed line and how to style it (header, rule, title, note, heading or plain)."""

    text: str
    style: str = ""


Grid = list[list[list[str]]]
"""Each row's cells as their unbreakable pieces (empty pieces dropped), computed once per table."""


def _grid(table: Table) -> Grid:
    return [[[p for p in _pieces(c) if p] for c in r] for r in table.rows]


def _widths(table: Table, grid: Grid, cols: list[int], width: int) -> list[int] | None:
    natural = [
        max([len(table.columns[i])] + [sum(map(len, r[i])) + max(0, len(r[i]) - 1) for r in grid])
        for i in cols
    ]
    minimum = [
        max([len(w) for w in table.columns[i].split()] + [len(p) for r in grid for p in r[i]]) for i in cols
    ]
    room = width - GAP * (len(cols) - 1)
    if sum(natural) <= room:
        return natural
    if sum(minimum) > room:
        return None
    # Whole columns first, cheapest first (fewest wrapped lines), then the rest shared by what each lacks.
    widths = list(minimum)
    spare = room - sum(minimum)
    open_ = []
    for k in sorted(range(len(cols)), key=lambda k: natural[k] - minimum[k]):
        if natural[k] - minimum[k] <= spare:
            spare -= natural[k] - minimum[k]
            widths[k] = natural[k]
        else:
            open_.append(k)
    total = sum(natural[k] - minimum[k] for k in open_)
    for k in open_:
        widths[k] += spare * (natural[k] - minimum[k]) // total if total else 0
    return widths


def _numeric(table: Table, i: int) -> bool:
    return any(isinstance(r[i], Rate) for r in table.rows)


def _wrapped(text: str, width: int, style: str) -> list[Line]:
    """Each line of ``text`` wrapped at words on its own (a note's list items stay one per line)."""
    return [
        Line(t, style)
        for part in text.split("\n")
        for t in textwrap.wrap(part, width, break_long_words=False, break_on_hyphens=False) or [""]
    ]


def lines(table: Table, width: int, *, keys: int | None = None) -> list[Line]:
    """The table as lines of at most ``width`` characters (longer only for a single unbreakable piece).

    Linear in the rows: each cell is cut into its pieces once, and each column's alignment is decided once.
    """
    out = _wrapped(table.title, width, "title")
    grid = _grid(table)
    cols = [i for i in range(len(table.columns)) if any(r[i] for r in grid)] or list(
        range(len(table.columns))
    )
    widths = _widths(table, grid, cols, width)
    if widths is not None:
        right = [_numeric(table, i) for i in cols]
        heads = [_wrap(table.columns[i].split(), w) for i, w in zip(cols, widths, strict=True)]
        depth = max(len(h) for h in heads)
        sep = " " * GAP
        for k in range(depth):
            cells = []
            for w, h, rt in zip(widths, heads, right, strict=True):
                t = h[k - (depth - len(h))] if k >= depth - len(h) else ""
                cells.append(t.rjust(w) if rt else t.ljust(w))
            out.append(Line(sep.join(cells).rstrip(), "header"))
        out.append(Line(sep.join("-" * w for w in widths), "rule"))
        for r in grid:
            wrapped = [_wrap(r[i], w) for i, w in zip(cols, widths, strict=True)]
            for k in range(max(len(c) for c in wrapped)):
                cells = []
                for w, c, rt in zip(widths, wrapped, right, strict=True):
                    t = c[k] if k < len(c) else ""
                    cells.append(t.rjust(w) if rt else t.ljust(w))
                out.append(Line(sep.join(cells).rstrip()))
    else:
        out += _blocks(table, grid, cols, width, keys)
    if table.note:
        out += _wrapped(table.note, width, "note")
    return out


def _blocks(table: Table, grid: Grid, cols: list[int], width: int, keys: int | None) -> list[Line]:
    """One block per row: the key columns as a heading, then ``column  value`` lines."""
    nkeys = keys if keys is not None else table.keys
    key_cols = [i for i in cols if i < nkeys]
    rest = [i for i in cols if i >= nkeys]
    label = max(len(table.columns[i]) for i in rest) if rest else 0
    label = min(label, width // 3)
    room = max(10, width - 2 - label - GAP)
    indent = " " * (2 + label + GAP)
    out: list[Line] = []
    if key_cols:
        names = " · ".join(table.columns[i] for i in key_cols)
        out += _wrapped(f"(too wide for the page: one block per {names})", width, "note")
    for r in grid:
        out.append(Line(""))
        heading: list[str] = []
        for i in key_cols:
            if r[i]:
                heading += (["·"] if heading else []) + [w for p in r[i] for w in p.split()]
        out += [Line(t, "heading") for t in _wrap(heading or ["-"], width)]
        for i in rest:
            if not r[i]:
                continue
            name = table.columns[i]
            values = _wrap(r[i], room)
            if len(name) <= label:
                out.append(Line(f"  {name.ljust(label)}{' ' * GAP}{values[0]}"))
                out += [Line(indent + v) for v in values[1:]]
            else:
                out.append(Line(f"  {name}"))
                out += [Line(indent + v) for v in values]
    if table.note:
        out.append(Line(""))
    return out


_STYLES = {"title": "bold", "header": "bold", "rule": "dim", "note": "dim", "heading": "bold cyan"}
"""The rich style of each kind of line, on a terminal and in the TUI."""


def rich_text(tables: Sequence[Table], width: int) -> Any:
    """The tables fitted to ``width`` as one styled rich Text, a blank line between tables: what the
    command line prints on a terminal, for a widget to draw."""
    from rich.text import Text

    out = Text()
    for n, t in enumerate(tables):
        if n:
            out.append("\n")
        for ln in lines(t, width):
            out.append(ln.text + "\n", _STYLES.get(ln.style, ""))
    out.rstrip()
    return out


def print_tables(tables: Sequence[Table], stream: IO[str] | None = None, *, width: int | None = None) -> None:
    """Print the tables fitted to the page, styled on a terminal unless NO_COLOR is set."""
    stream = stream or sys.stdout
    width = width or page_width(stream)
    colour = use_colour(stream)
    console = None
    if colour:
        from rich.console import Console

        console = Console(file=stream, highlight=False, soft_wrap=True, width=width)
    for n, t in enumerate(tables):
        block = ([Line("")] if n else []) + lines(t, width)
        for ln in block:
            if console is not None:
                from rich.text import Text

                console.print(Text(ln.text, style=_STYLES.get(ln.style, "")))
            else:
                stream.write(ln.text + "\n")
