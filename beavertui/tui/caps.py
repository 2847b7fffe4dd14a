"""Bounds on what a pane renders, so a hostile or runaway session cannot stall a step or fill memory.

A session file may hold a reply of megabytes, a run log of tens of megabytes or a candidate of tens of
thousands of lines. Panes show the head and tail of such text with a "truncated, N bytes" note instead;
the session file itself is unchanged (``r`` and the plain-text commands read the same file).
"""

from __future__ import annotations

#: Characters of one block of text (a stage log, a reply) a pane renders: head and tail of this many.
TEXT_CHARS = 64 << 10
#: Lines of one source file a diff or whole-file view highlights.
CODE_LINES = 800
#: Characters of one source file a diff or whole-file view highlights.
CODE_CHARS = 64 << 10


def cap_text(text: str, limit: int = TEXT_CHARS) -> tuple[str, str | None]:
    """(head and tail of ``text`` within ``limit`` characters, the note saying what was left out or None)."""
    if len(text) <= limit:
        return text, None
    half = limit // 2
    left_out = len(text.encode("utf-8", errors="replace")) - len(
        (text[:half] + text[-half:]).encode("utf-8", errors="replace")
    )
    note = f"… truncated, {left_out:,} bytes not shown (of {len(text):,} characters) …"
    return f"{text[:half]}\n{note}\n{text[-half:]}", note


def cap_code(code: str) -> tuple[str, str | None]:
    """The first CODE_LINES lines (and CODE_CHARS characters) of a source, with a note when cut."""
    if len(code) <= CODE_CHARS and code.count("\n") <= CODE_LINES:
        return code, None
    head = code[:CODE_CHARS]
    lines = head.split("\n")[:CODE_LINES]
    shown = "\n".join(lines) + "\n"
    left_out = len(code.encode("utf-8", errors="replace")) - len(shown.encode("utf-8", errors="replace"))
    total = code.count("\n") + 1
    return shown, f"truncated, {left_out:,} bytes not shown: lines 1-{len(lines):,} of {total:,}"
