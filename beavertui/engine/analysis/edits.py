"""Edit precision and bug recall of a repair: did the model debug the broken start, or rewrite it?

Following the Precise Debugging Benchmark (Zhu et al., 2026), a successful repair is compared with the
edit that turns the broken start into the reference, line by line. The definitions, exactly:

1. **Lines.** Both texts are split into lines and every line is right-stripped (trailing spaces, tabs and
   carriage returns are not edits). ``difflib.SequenceMatcher`` (no auto-junk) aligns broken start
   lines with the other text and yields its opcodes.
2. **Changed lines.** Each non-equal opcode covers broken-start lines ``[i1, i2)`` and new lines
   ``[j1, j2)``. Blank lines on either side are dropped (a blank-line edit is never an edit); the opcode
   then counts ``max(old, new)`` changed lines, as a line-level edit script would (a modified line, a
   deleted line or an added line is one line each). An opcode left with no non-blank line is dropped.
   Every changed line gets a position on the broken start: a deleted or modified line sits at its index
   ``i``; a line added beyond the old ones sits between lines, at ``i2 - 0.5`` (``i1 - 0.5`` for a pure
   insertion).
3. **Blocks.** The reference edit's changed lines are grouped into blocks of contiguous changes: one block
   per opcode, merged with the next one when only blank lines separate them. A block covers broken-start
   lines ``[s, e)`` (``s == e`` for a pure insertion) and has ``size`` changed lines.
4. **Tolerance.** A block's window is the closed interval ``[s - 0.5 - t, e - 0.5 + t]`` of positions, with
   ``t`` the tolerance in lines (default 1): the block itself, the gaps just before and after it, and
   ``t`` lines on each side. A block accepts at most ``size + t`` of the repair's changed lines (its own
   lines plus ``t`` extra).
5. **Precision** (edit level) = needed / changed, where changed is the number of the repair's changed
   lines and needed the largest number of them that can be assigned to reference blocks whose window
   contains them, within each block's capacity (an exact matching of points to intervals: earliest
   window end first). None when the repair changes no line.
6. **Recall** (bug level) = recovered / blocks, where a reference block is recovered when at least one of
   the repair's changed lines is assigned to it. Because only successful repairs are scored, a repair
   that touches a block's region within the tolerance either reproduced the reference's fix or replaced
   it with an equivalent that passes the harness; both count (PDB re-runs the tests on each alternative
   edit; here the repair's own passing run is that test). None when the reference edit is empty.
   ``identical`` additionally marks blocks the repair reproduced line for line.

Pure: no file, process or GPU access. docs/analysis.md repeats these definitions for users.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

DEFAULT_TOLERANCE = 1
"""Extra lines a reference block absorbs, and how far (in lines) a repair may stray around it."""


@dataclass(frozen=True)
class Hunk:
    """One non-equal opcode of a diff from the broken start, blank lines dropped."""

    start: int
    """First broken-start line it covers (0-based)."""
    end: int
    """One past the last broken-start line it covers (== start for a pure insertion)."""
    old: tuple[str, ...]
    """Non-blank broken-start lines it removes or modifies."""
    new: tuple[str, ...]
    """Non-blank lines it puts in their place."""
    positions: tuple[float, ...]
    """Position on the broken start of each changed line (integer: an old line; .5: between lines)."""

    @property
    def size(self) -> int:
        return len(self.positions)


@dataclass(frozen=True)
class Block:
    """A reference edit block and how the repair relates to it."""

    start: int
    """First broken-start line (0-based)."""
    end: int
    """One past the last broken-start line."""
    size: int
    """Changed lines in the block."""
    assigned: int
    """Repair lines counted as needed for this block."""
    identical: bool
    """The repair makes exactly this change (same old lines replaced by the same new lines)."""

    @property
    def recovered(self) -> bool:
        return self.assigned > 0


@dataclass(frozen=True)
class EditScore:
    """Edit-level precision and bug-level recall of one repair."""

    precision: float | None
    """needed / changed lines of the repair; None when the repair changes nothing."""
    recall: float | None
    """recovered / reference blocks; None when the reference edit is empty."""
    changed: int
    """Changed lines of the repair (blank-line edits dropped)."""
    needed: int
    """Of those, lines inside a reference block's window and capacity."""
    blocks: tuple[Block, ...]
    """The reference edit's blocks, in order."""
    tolerance: int
    """The tolerance t the score was computed with."""

    @property
    def recovered(self) -> int:
        return sum(1 for b in self.blocks if b.recovered)


def lines_of(text: str) -> list[str]:
    """Split into right-stripped lines (the unit every definition counts)."""
    return [line.rstrip() for line in text.splitlines()]


def hunks(before: str, after: str) -> list[Hunk]:
    """The non-equal opcodes turning ``before`` into ``after``, blank-line edits dropped."""
    a, b = lines_of(before), lines_of(after)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[Hunk] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_idx = [i for i in range(i1, i2) if a[i].strip()]
        new = tuple(line for line in b[j1:j2] if line.strip())
        if not old_idx and not new:
            continue
        extra_at = (i2 - 0.5) if i2 > i1 else (i1 - 0.5)
        positions = [float(i) for i in old_idx]
        positions += [extra_at] * max(0, len(new) - len(old_idx))
        out.append(Hunk(i1, i2, tuple(a[i] for i in old_idx), new, tuple(positions)))
    return out


def blocks_of(before: str, after: str) -> list[Hunk]:
    """The edit's blocks: hunks merged when only blank broken-start lines separate them."""
    a = lines_of(before)
    merged: list[Hunk] = []
    for h in hunks(before, after):
        if merged and all(not line.strip() for line in a[merged[-1].end : h.start]):
            p = merged[-1]
            merged[-1] = Hunk(p.start, h.end, p.old + h.old, p.new + h.new, p.positions + h.positions)
        else:
            merged.append(h)
    return merged


def _window(block: Hunk, tolerance: int) -> tuple[float, float]:
    return block.start - 0.5 - tolerance, block.end - 0.5 + tolerance


def edit_score(
    broken_start: str, repair: str, reference: str, *, tolerance: int = DEFAULT_TOLERANCE
) -> EditScore:
    """Score a (successful) repair's edit of the broken start against the reference's edit."""
    if tolerance < 0:
        raise ValueError("tolerance must be >= 0")
    ref_blocks = blocks_of(broken_start, reference)
    rep_hunks = hunks(broken_start, repair)
    windows = [_window(b, tolerance) for b in ref_blocks]
    capacity = [b.size + tolerance for b in ref_blocks]
    assigned = [0] * len(ref_blocks)
    points = sorted(p for h in rep_hunks for p in h.positions)
    needed = 0
    for p in points:
        # Among open blocks containing p, fill the one whose window ends first (optimal for intervals).
        best: int | None = None
        for k, (lo, hi) in enumerate(windows):
            if lo <= p <= hi and assigned[k] < capacity[k] and (best is None or hi < windows[best][1]):
                best = k
        if best is not None:
            assigned[best] += 1
            needed += 1
    rep_set = {(h.start, h.end, h.new) for h in rep_hunks}
    blocks = tuple(
        Block(b.start, b.end, b.size, assigned[k], (b.start, b.end, b.new) in rep_set or _same(b, rep_hunks))
        for k, b in enumerate(ref_blocks)
    )
    changed = len(points)
    return EditScore(
        precision=needed / changed if changed else None,
        recall=sum(1 for b in blocks if b.recovered) / len(blocks) if blocks else None,
        changed=changed,
        needed=needed,
        blocks=blocks,
        tolerance=tolerance,
    )


def _same(block: Hunk, rep: list[Hunk]) -> bool:
    """The repair's hunks inside the block's span rewrite it into exactly the reference's lines."""
    inside = [h for h in rep if h.start >= block.start and h.end <= block.end and h.size]
    if not inside or inside[0].start != block.start or inside[-1].end != block.end:
        return False
    touching = [h for h in rep if h.end > block.start and h.start < block.end]
    if len(touching) != len(inside):
        return False
    return tuple(line for h in inside for line in h.new) == block.new and tuple(
        line for h in inside for line in h.old
    ) == tuple(block.old)
