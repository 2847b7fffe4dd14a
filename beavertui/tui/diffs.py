"""Syntax-highlighted diffs of CUDA sources for the diff panes.

Both sides are highlighted whole with pygments (through rich's Syntax, so multi-line comments and strings
keep their colours) and the changed lines are taken from those highlighted files, so a diff shows CUDA
colours with added and removed lines marked. Pure functions from strings to rich Text; no widgets.
"""

from __future__ import annotations

import difflib
from functools import lru_cache

from rich.syntax import Syntax
from rich.text import Text

THEME = "ansi_dark"
ADDED = "on #123d1f"
REMOVED = "on #4a1717"
GUTTER = "#7f8c8d"


def lexer_for(language: str) -> str:
    return {"cuda": "cuda", "cpp": "cpp", "python": "python"}.get(language, "cuda")


@lru_cache(maxsize=64)
def highlighted_lines(code: str, lexer: str) -> tuple[Text, ...]:
    """The code highlighted as a whole, then split into lines (cached: stepping back and forth is free)."""
    text = Syntax(code, lexer, theme=THEME).highlight(code)
    text.rstrip()
    return tuple(text.split("\n", allow_blank=True))


def whole_file(code: str, lexer: str = "cuda") -> Text:
    """The file with line numbers."""
    lines = highlighted_lines(code, lexer)
    width = len(str(len(lines)))
    out = Text()
    for n, line in enumerate(lines, start=1):
        out.append(f"{n:>{width}} │ ", style=GUTTER)
        out.append_text(line)
        out.append("\n")
    return out


def diff(old: str, new: str, lexer: str = "cuda", context: int = 3) -> tuple[Text, int, int]:
    """A unified-style diff with highlighted code; returns (text, lines added, lines removed)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    old_hl, new_hl = highlighted_lines(old, lexer), highlighted_lines(new, lexer)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    out = Text()
    added = removed = 0
    width = len(str(max(len(old_lines), len(new_lines), 1)))

    def line(marker: str, number: int, body: Text, style: str) -> None:
        row = Text(f"{marker} {number:>{width}} │ ", style=GUTTER + (f" {style}" if style else ""))
        piece = body.copy()
        if style:
            piece.stylize(style)
        row.append_text(piece)
        out.append_text(row)
        out.append("\n")

    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(
            f"@@ -{first[1] + 1},{last[2] - first[1]} +{first[3] + 1},{last[4] - first[3]} @@\n",
            style="bold cyan",
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for j in range(j1, j2):
                    line(" ", j + 1, _at(new_hl, j), "")
                continue
            if tag in ("replace", "delete"):
                for i in range(i1, i2):
                    line("-", i + 1, _at(old_hl, i), REMOVED)
                    removed += 1
            if tag in ("replace", "insert"):
                for j in range(j1, j2):
                    line("+", j + 1, _at(new_hl, j), ADDED)
                    added += 1
    if not added and not removed:
        out.append("no change: the two files are identical\n", style="italic")
    return out, added, removed


def _at(lines: tuple[Text, ...], i: int) -> Text:
    return lines[i] if i < len(lines) else Text("")
