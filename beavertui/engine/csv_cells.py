"""The one rule for text cells in the CSV files beavertui writes (and reads back): no formula injection.

A spreadsheet evaluates a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a
formula, so a model name, task id or reason such as ``=HYPERLINK(...)`` would run when the file is opened.
``guard`` prefixes such a text cell with a single quote (``'=HYPERLINK(...)``), and also one that already
begins with a quote, so that ``unguard`` (drop one leading quote) gives back exactly the original text for
every string. Numbers are never guarded: an ``int``/``float`` value, or a string that is a plain decimal
number (``-0.33``, ``+1e-3``), is written as it is, so a numeric column stays numeric; so is a lone ``-``,
the tables' mark for "none", which no spreadsheet evaluates. ``Writer`` writes rows so guarded.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any, TextIO

#: What a spreadsheet reads as the start of a formula, and the guard's own quote (so that it is reversible).
TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "'")

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def guard(value: Any) -> Any:
    """The cell to write for ``value``: a text that a spreadsheet would evaluate (or that begins with a
    quote) gets a leading ``'``; anything else, numbers included, is returned as it is."""
    if (
        isinstance(value, str)
        and value.startswith(TRIGGERS)
        and value != "-"
        and not _NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def unguard(value: Any) -> Any:
    """The text a cell read from such a file stands for: one leading ``'`` removed (other values as they are)."""
    if isinstance(value, str) and value.startswith("'"):
        return value[1:]
    return value


class Writer:
    """``csv.writer`` (lines ended by ``\\n``) with every cell guarded. A row with a carriage return in a cell
    is written with every cell quoted: ``csv`` quotes a bare CR only where the line terminator holds one,
    and such a cell left unquoted does not read back."""

    def __init__(self, out: TextIO) -> None:
        self._plain = csv.writer(out, lineterminator="\n")
        self._quoted = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def writerow(self, row: Iterable[Any]) -> None:
        cells = [guard(c) for c in row]
        cr = any(isinstance(c, str) and "\r" in c for c in cells)
        (self._quoted if cr else self._plain).writerow(cells)
