"""Apply a unified diff to one text: the small, strict applier behind ``Task.minimal_fix``.

A task's ``minimal_fix.patch`` is ``diff -u`` output from its broken start to the fixed file: an optional
``---`` / ``+++`` header and one or more ``@@ -a,b +c,d @@`` hunks of context (`` ``), removed (``-``) and
added (``+``) lines. The applier is exact: every context and removed line must match the source at the
hunk's stated position (no fuzz, no offset search), the counts in each hunk header must match its body,
and hunks must come in order without overlapping. Anything else raises PatchError with one line saying
where and why, so a corpus patch that drifted from its broken start is caught, never half applied.

Pure: no file, process or GPU access.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from beavertui.engine.errors import BeaverError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"


class PatchError(BeaverError):
    """A patch is malformed or does not apply to the text it was given."""


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` hunk: where it starts in the old text and its lines, each with its one-character tag."""

    old_start: int
    """1-based first old line (0 for a hunk that only adds to an empty text)."""
    old_count: int
    new_count: int
    lines: tuple[tuple[str, str], ...]
    """(tag, text) with tag one of ' ', '-', '+'; text without its line ending."""
    header_line: int
    """1-based line of the ``@@`` header in the patch, for messages."""


@dataclass(frozen=True)
class Patch:
    old_name: str | None
    new_name: str | None
    hunks: tuple[Hunk, ...]
    old_ends_without_newline: bool = False
    new_ends_without_newline: bool = False


def parse(text: str) -> Patch:
    """Parse a unified diff of one file; PatchError on anything that is not one."""
    lines = text.splitlines()
    old_name = new_name = None
    i = 0
    while i < len(lines) and not lines[i].startswith("@@"):
        line = lines[i]
        if line.startswith("--- "):
            old_name = line[4:].split("\t")[0].strip()
        elif line.startswith("+++ "):
            new_name = line[4:].split("\t")[0].strip()
        elif line.strip() and not line.startswith(("diff ", "index ", "Only in ")):
            raise PatchError(f"line {i + 1}: expected a '---'/'+++' header or a hunk, got {line[:60]!r}")
        i += 1
    hunks: list[Hunk] = []
    old_nl = new_nl = False
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            raise PatchError(f"line {i + 1}: expected a hunk header '@@ -a,b +c,d @@', got {lines[i][:60]!r}")
        header_line = i + 1
        old_start = int(m.group(1))
        old_count = int(m.group(2)) if m.group(2) is not None else 1
        new_count = int(m.group(4)) if m.group(4) is not None else 1
        i += 1
        body: list[tuple[str, str]] = []
        seen_old = seen_new = 0
        while i < len(lines) and (seen_old < old_count or seen_new < new_count):
            line = lines[i]
            if line == _NO_NEWLINE:
                i += 1
                continue
            tag, rest = (line[0], line[1:]) if line else (" ", "")
            if tag not in " -+":
                raise PatchError(
                    f"line {i + 1}: hunk at line {header_line} ends early ({seen_old} of {old_count} old, "
                    f"{seen_new} of {new_count} new lines), got {line[:60]!r}"
                )
            seen_old += tag != "+"
            seen_new += tag != "-"
            body.append((tag, rest))
            i += 1
            if i < len(lines) and lines[i] == _NO_NEWLINE:
                old_nl = old_nl or tag in " -"
                new_nl = new_nl or tag in " +"
        if seen_old != old_count or seen_new != new_count:
            raise PatchError(
                f"hunk at line {header_line}: header promises {old_count} old and {new_count} new lines, "
                f"the body has {seen_old} and {seen_new}"
            )
        while i < len(lines) and lines[i] == _NO_NEWLINE:
            i += 1
        hunks.append(Hunk(old_start, old_count, new_count, tuple(body), header_line))
    if not hunks:
        raise PatchError("no hunks: not a unified diff")
    return Patch(old_name, new_name, tuple(hunks), old_nl, new_nl)


def apply(text: str, patch: str | Patch) -> str:
    """The text with the patch applied; PatchError naming the first hunk and line that do not match.

    Lines the patch keeps or leaves alone keep their own line endings; added lines end with a newline,
    except a last line the patch marks "No newline at end of file"."""
    p = parse(patch) if isinstance(patch, str) else patch
    src = text.splitlines(keepends=True)
    out: list[str] = []
    pos = 0  # 0-based next source line not yet copied
    for h in p.hunks:
        start = h.old_start - 1 if h.old_count else h.old_start
        if start < pos:
            raise PatchError(f"hunk at line {h.header_line}: overlaps or precedes the previous hunk")
        if start + h.old_count > len(src):
            raise PatchError(
                f"hunk at line {h.header_line}: needs old lines {h.old_start}..{h.old_start + h.old_count - 1}, "
                f"the text has {len(src)}"
            )
        out.extend(src[pos:start])
        at = start
        for tag, line in h.lines:
            if tag == "+":
                out.append(line + "\n")
                continue
            if src[at].rstrip("\r\n") != line.rstrip("\r"):
                raise PatchError(
                    f"hunk at line {h.header_line} does not apply: old line {at + 1} is "
                    f"{src[at].rstrip(chr(10))[:60]!r}, the patch expects {line[:60]!r}"
                )
            if tag == " ":
                out.append(src[at])
            at += 1
        pos = at
    reaches_end = pos == len(src)
    out.extend(src[pos:])
    result = "".join(out)
    if reaches_end and p.new_ends_without_newline:
        result = result[:-2] if result.endswith("\r\n") else result.removesuffix("\n")
    return result
