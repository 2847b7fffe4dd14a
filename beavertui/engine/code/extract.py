"""Code extraction from a model reply: the fenced block in the solution's language, the last one if several.

Reasoning sections (``<think>...</think>``) are removed first, so code sketched while thinking is never
built. When no usable code is found the reason is returned (the attempt then fails as ``buildability``
with reason "no code" and the loop goes on). This module must not repair, reformat or judge the code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Fence info strings accepted for each solution language; untagged fences are accepted too.
LANGUAGE_TAGS: dict[str, frozenset[str]] = {
    "cuda": frozenset({"cuda", "cu", "cuh", "c++", "cpp", "cc", "cxx", "c", "h", "hpp"}),
    "cpp": frozenset({"cpp", "c++", "cc", "cxx", "c", "h", "hpp", "cuda", "cu", "cuh"}),
    "python": frozenset({"python", "py", "python3"}),
}

#: An opening fence line; the info string is stripped afterwards (no lazy match: linear on any line).
_OPEN = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    """One fenced block."""

    tag: str
    """First word of the info string, lower case ('' when untagged)."""
    code: str
    closed: bool


@dataclass(frozen=True)
class Extraction:
    """The extracted candidate, or why there is none."""

    code: str | None
    reason: str | None = None
    """Why no code was found (None when code was found)."""
    blocks: int = 0
    """Fenced blocks seen outside reasoning sections."""


def strip_think(text: str) -> str:
    """Remove reasoning sections, including an unclosed one at the end and an orphan opening part.

    One pass over the tags (linear time, whatever the reply holds): a section runs from ``<think>`` to
    the next ``</think>``; a ``</think>`` outside any section means the chat template opened one in the
    prompt, so everything before it goes; an unclosed ``<think>`` (cut off while thinking) drops the rest.
    """
    kept: list[tuple[int, int]] = []
    pos = 0
    start: int | None = None
    for m in _TAG.finditer(text):
        closing = bool(m.group(1))
        if start is None:
            if closing:  # orphan close
                kept, pos = [], m.end()
            else:
                kept.append((pos, m.start()))
                start = m.start()
        elif closing:
            start, pos = None, m.end()
    if start is None:
        kept.append((pos, len(text)))
    return "".join(text[a:b] for a, b in kept)


def fenced_blocks(text: str) -> list[Block]:
    """All fenced blocks in order (CommonMark-style: a closing fence of the same character, at least as long)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        info = m.group("info").strip()
        tag = info.split()[0].lower().lstrip("{.").rstrip("}") if info else ""
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        blocks.append(Block(tag=tag, code="\n".join(body) + "\n" if body else "", closed=closed))
    return blocks


def extract(reply: str, language: str = "cuda") -> Extraction:
    """The last fenced block in ``language`` (or untagged) of the reply, without reasoning sections."""
    if not reply.strip():
        return Extraction(None, "empty reply")
    visible = strip_think(reply)
    if not visible.strip():
        return Extraction(None, "the reply holds only reasoning (<think>) and no answer")
    blocks = fenced_blocks(visible)
    if not blocks:
        return Extraction(None, "no fenced code block in the reply")
    tags = LANGUAGE_TAGS.get(language, frozenset({language}))
    usable = [b for b in blocks if b.tag in tags or b.tag == ""]
    if not usable:
        seen = ", ".join(sorted({b.tag for b in blocks}))
        return Extraction(None, f"no {language} code block (found: {seen})", len(blocks))
    block = usable[-1]
    if not block.closed:
        return Extraction(None, "the last code block is not closed (reply cut off?)", len(blocks))
    if not block.code.strip():
        return Extraction(None, "the code block is empty", len(blocks))
    return Extraction(block.code, None, len(blocks))
