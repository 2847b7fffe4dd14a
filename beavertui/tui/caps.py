"""Bounds on what a pane renders, so a hostile or runaway session cannot stall a step or fill memory.

A session file may hold a reply of megabytes, a run log of tens of megabytes, a candidate of tens of
thousands of lines, a line of megabytes, or a hundred thousand sanitizer runs of one iteration. Panes show
the head and tail of such text, the first items of such lists, with a "truncated, N bytes" or "… N more"
note instead; the session file itself is unchanged (``r`` and the plain-text commands read the same file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from rich.text import Text

#: Characters of one block of text (a stage log, a reply) a pane renders: head and tail of this many.
TEXT_CHARS = 64 << 10
#: Lines of one source file a diff or whole-file view highlights.
CODE_LINES = 800
#: Characters of one source file a diff or whole-file view highlights.
CODE_CHARS = 64 << 10
#: Characters of one line of a source a diff or whole-file view shows.
CODE_LINE_CHARS = 2000
#: Characters of a one-line value (a reason, a signature, a command, a detail, a name).
LINE_CHARS = 2000
#: Items of a list a pane shows (flags, infrastructure errors, sanitizer runs).
ITEMS = 50
#: Stage runs the raw log shows whole (build, run and the first sanitizer runs).
STAGES = 8
#: Timing samples drawn in one sparkline, and used for a median a pane shows.
SAMPLES = 256
MEDIAN_SAMPLES = 100_000

T = TypeVar("T")


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", errors="replace"))


def cap_text(text: str, limit: int = TEXT_CHARS) -> tuple[str, str | None]:
    """(head and tail of ``text`` within ``limit`` characters, the note saying what was left out or None)."""
    if len(text) <= limit:
        return text, None
    half = limit // 2
    left_out = _bytes(text) - _bytes(text[:half] + text[-half:])
    note = f"… truncated, {left_out:,} bytes not shown (of {len(text):,} characters) …"
    return f"{text[:half]}\n{note}\n{text[-half:]}", note


def cap_line(text: str, limit: int = LINE_CHARS) -> str:
    """A one-line value cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … truncated, {_bytes(text) - _bytes(text[:limit]):,} bytes not shown"


def cap_items(items: Sequence[T], limit: int = ITEMS) -> tuple[Sequence[T], int]:
    """(the first ``limit`` items, how many more there are)."""
    return items[:limit], max(0, len(items) - limit)


def append_capped(
    out: Text, items: Sequence[T], line: Callable[[T], str], style: str, noun: str, indent: str = ""
) -> None:
    """One line per item (``line(item)``) for the first ITEMS items, then a dim "… N more <noun>" line
    (after ``indent``) when there are more."""
    shown, more = cap_items(items)
    for item in shown:
        out.append(f"{line(item)}\n", style=style)
    if more:
        out.append(f"{indent}… {more:,} more {noun}\n", style="dim")


def cap_code(code: str) -> tuple[str, str | None]:
    """The first CODE_LINES lines (and CODE_CHARS characters) of a source, each line cut to CODE_LINE_CHARS
    characters, with a note when cut."""
    if len(code) <= CODE_CHARS and code.count("\n") <= CODE_LINES and len(code) <= CODE_LINE_CHARS:
        return code, None
    lines = code[:CODE_CHARS].split("\n")[:CODE_LINES]
    long_lines = sum(len(line) > CODE_LINE_CHARS for line in lines)
    if len(code) <= CODE_CHARS and code.count("\n") <= CODE_LINES and not long_lines:
        return code, None
    lines = [line[:CODE_LINE_CHARS] for line in lines]
    shown = "\n".join(lines) + "\n"
    left_out = _bytes(code) - _bytes(shown)
    total = code.count("\n") + 1
    cut = f", {long_lines:,} long lines cut to {CODE_LINE_CHARS:,} characters" if long_lines else ""
    return shown, f"truncated, {left_out:,} bytes not shown: lines 1-{len(lines):,} of {total:,}{cut}"
