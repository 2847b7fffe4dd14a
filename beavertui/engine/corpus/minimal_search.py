"""The smallest subset of a reference's changes that repairs a broken start: delta debugging (ddmin).

A task's reference differs from its broken start by a diff (``difflib.SequenceMatcher`` over lines, auto-junk
off). Each non-equal opcode is a **hunk**; each line a hunk removes from the broken start or adds from the
reference is a **unit**. Any set of units gives a text (``Diff.apply``): the broken start with those lines
removed and those added, the other lines of their hunks left as they were; no units give the broken start
back, all of them the reference. Inside a hunk that replaces n old lines by m new ones, old line p and new
line q are placed at (p + 0.5) / n and (q + 0.5) / m of the hunk, an old line first on a tie, so that
changing one line of a block of modified lines puts the new line where the old one was.

``minimize`` asks an oracle (does this text pass the task's own test at the gate?) and searches in two
phases: Zeller's ddmin over the hunks (each taken whole), then ddmin over the units of the hunks kept (after
one try without their blank and comment lines). The result passes the oracle and is 1-minimal at the line
level: removing any one of its units makes the oracle fail (ddmin's guarantee, once the search ends at
single units). A search the budget cuts in the line phase still holds a passing set 1-minimal over hunks. The search is deterministic; an oracle whose
answers are kept by content (``Diff.apply`` gives the same text for the same units) makes a search cut by
its budget (``Budget``: oracle calls, wall time) resumable: run again, it asks the kept answers the same
questions in the same order and goes on where it stopped.

Pure: no file, process or GPU access.
"""

from __future__ import annotations

import difflib
import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["-", "+"]


@dataclass(frozen=True)
class Unit:
    """One line of the reference's diff: an old line removed ("-") or a new line added ("+")."""

    hunk: int
    """Index of its hunk."""
    kind: Kind
    line: int
    """0-based line in the broken start ("-") or in the reference ("+")."""


@dataclass(frozen=True)
class Hunk:
    """One non-equal opcode: broken-start lines [old_start, old_end) become reference lines [new_start, new_end)."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int
    units: tuple[int, ...]
    """Its units' indices in ``Diff.units``, in the order they are placed."""


def _split(text: str) -> list[tuple[str, str]]:
    """Lines as (text, line ending); the last line's ending may be ""."""
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        out.append((body, line[len(body) :]))
    return out


def _join(lines: Sequence[tuple[str, str]]) -> str:
    """Lines back into text; a line without an ending that is not the last gets a newline."""
    last = len(lines) - 1
    return "".join(body + (end or ("\n" if i < last else "")) for i, (body, end) in enumerate(lines))


@dataclass(frozen=True)
class Diff:
    """The reference's changes to a broken start, as hunks of line units."""

    old: tuple[tuple[str, str], ...]
    new: tuple[tuple[str, str], ...]
    hunks: tuple[Hunk, ...]
    units: tuple[Unit, ...]
    _equal: tuple[tuple[int, int], ...] = field(repr=False, default=())
    """The equal runs of old lines [i1, i2) before each hunk and after the last (len(hunks) + 1 runs)."""

    def hunk_units(self, hunks: Iterable[int]) -> frozenset[int]:
        """The units of these hunks."""
        return frozenset(u for h in hunks for u in self.hunks[h].units)

    @property
    def all_units(self) -> frozenset[int]:
        return frozenset(range(len(self.units)))

    @property
    def code_units(self) -> frozenset[int]:
        """The units that are not blank or ``//`` comment lines (``trivial``)."""
        return frozenset(u for u in range(len(self.units)) if not trivial(_line(self, u)))

    def apply(self, chosen: Iterable[int]) -> str:
        """The broken start with the chosen units applied."""
        pick = frozenset(chosen)
        out: list[tuple[str, str]] = []
        for k, hunk in enumerate(self.hunks):
            i1, i2 = self._equal[k]
            out.extend(self.old[i1:i2])
            for u in hunk.units:
                unit = self.units[u]
                if unit.kind == "-":
                    if u not in pick:
                        out.append(self.old[unit.line])
                elif u in pick:
                    out.append(self.new[unit.line])
        i1, i2 = self._equal[-1]
        out.extend(self.old[i1:i2])
        return _join(out)

    def changed_lines(self, chosen: Iterable[int]) -> int:
        """Changed lines of the edit ``chosen`` makes, counted as edit precision counts them
        (docs/analysis.md): per non-equal opcode from the broken start, max(old, new) non-blank lines."""
        return changed_lines(_join(self.old), self.apply(chosen))


def changed_lines(before: str, after: str) -> int:
    """Per non-equal opcode of the diff of right-stripped lines, max(old, new) non-blank lines (blank-line
    edits are no edits); the count edit precision's changed lines use."""
    a = [line.rstrip() for line in before.splitlines()]
    b = [line.rstrip() for line in after.splitlines()]
    total = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            total += max(sum(1 for x in a[i1:i2] if x.strip()), sum(1 for x in b[j1:j2] if x.strip()))
    return total


def diff(broken: str, reference: str) -> Diff:
    """The reference's changes to the broken start (lines compared with their endings, so that every unit
    applied gives the reference byte for byte)."""
    old, new = _split(broken), _split(reference)
    matcher = difflib.SequenceMatcher(None, [t + e for t, e in old], [t + e for t, e in new], autojunk=False)
    hunks: list[Hunk] = []
    units: list[Unit] = []
    equal: list[tuple[int, int]] = []
    at = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        equal.append((at, i1))
        at = i2
        n, m = i2 - i1, j2 - j1
        placed = sorted(
            [((p + 0.5) / n, 0, Unit(len(hunks), "-", i1 + p)) for p in range(n)]
            + [((q + 0.5) / m, 1, Unit(len(hunks), "+", j1 + q)) for q in range(m)],
            key=lambda x: (x[0], x[1]),
        )
        first = len(units)
        units.extend(u for *_, u in placed)
        hunks.append(Hunk(i1, i2, j1, j2, tuple(range(first, len(units)))))
    equal.append((at, len(old)))
    return Diff(tuple(old), tuple(new), tuple(hunks), tuple(units), tuple(equal))


def unified(broken: str, fixed: str, old_name: str = "broken_start", new_name: str = "minimal_fix") -> str:
    """``diff -u`` of two texts, in the form engine/corpus/patch.py applies (a last line without a newline
    is marked). Raises ValueError when the patch would not give ``fixed`` back."""
    from beavertui.engine.corpus import patch

    # lines compared with their endings, so that a last line without a newline differs from the same line
    # with one (GNU diff's rule), and written without them
    a, b = broken.splitlines(keepends=True), fixed.splitlines(keepends=True)
    lines: list[str] = []
    for k, line in enumerate(difflib.unified_diff(a, b, old_name, new_name, lineterm="", n=3)):
        if k < 2 or line.startswith("@@"):  # the "---" / "+++" header, a hunk's header
            lines.append(line)
            continue
        tag, body = line[:1], line[1:]
        lines.append(tag + body.rstrip("\r\n"))
        if not body.endswith(("\n", "\r")):
            lines.append("\\ No newline at end of file")
    text = "\n".join(lines) + "\n"
    if patch.apply(broken, text) != fixed:
        raise ValueError("the unified diff does not give the fixed text back")
    return text


def text_hash(text: str) -> str:
    """SHA-256 of a text: the key an oracle's answer is kept under."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class BudgetExhausted(Exception):
    """The search's budget (oracle calls or wall time) is spent."""


@dataclass
class Budget:
    """What a search may spend: fresh oracle calls (answers already kept cost nothing) and wall time."""

    max_calls: int | None = None
    deadline: float | None = None
    """``clock()`` time after which no fresh call starts."""
    clock: Callable[[], float] = time.monotonic
    calls: int = 0
    """Fresh calls made so far."""

    def spend(self) -> None:
        """Count one fresh call; BudgetExhausted when none is left."""
        if self.max_calls == 0:
            raise BudgetExhausted("no kept answer to the next question, and no oracle call allowed (a replay)")
        if self.max_calls is not None and self.calls >= self.max_calls:
            raise BudgetExhausted(f"{self.calls} oracle calls made (at most {self.max_calls})")
        if self.deadline is not None and self.clock() >= self.deadline:
            raise BudgetExhausted(f"out of wall time after {self.calls} oracle calls")
        self.calls += 1


Oracle = Callable[[str], bool]
"""Does this text pass (the task's test, at the gate)?"""
Status = Literal["minimal", "whole", "start_passes", "reference_fails", "budget"]
Minimality = Literal["lines", "hunks"]


@dataclass(frozen=True)
class Result:
    """What a search found."""

    status: Status
    """``minimal``: a proper subset of the reference's changes (it leaves out a line of code), 1-minimal at
    the line level; ``whole``: no line of code of the reference's diff can be left out (the search ended);
    ``start_passes``: the broken start passes as it is; ``reference_fails``: the reference itself fails, so
    no subset of its changes is known to pass; ``budget``: the budget ran out (``phase`` says where)."""
    chosen: frozenset[int] | None
    """The passing units found (the best so far when cut by the budget); None when none is known to pass."""
    phase: Literal["start", "hunks", "lines", "done"]
    """Where the search stopped: ``done``, or the phase the budget cut."""
    minimality: Minimality | None = None
    """What ``chosen`` is known to be 1-minimal over: ``lines`` (no single line can be left out: the search
    ended), ``hunks`` (no single hunk can: the budget cut the line phase), None (neither)."""
    hunks: frozenset[int] = frozenset()
    """The hunks the hunk phase kept (all of them until it ends)."""
    asked: int = 0
    """Questions put to the oracle (each distinct text once), kept answers included."""
    why: str = ""
    """The reason in words."""


def ddmin(
    items: Sequence[int],
    test: Callable[[frozenset[int]], bool],
    subsets: bool = True,
    reduced: Callable[[frozenset[int]], None] | None = None,
) -> frozenset[int]:
    """Zeller's ddmin: a subset of ``items`` that passes ``test`` and from which no single item can be
    removed (``test(items)`` must hold, ``test(∅)`` is assumed to fail). At doubling granularity, each chunk
    alone (``subsets``), then everything but each chunk in turn, every chunk whose removal passes removed
    before the next is tried (a round goes on from where it removed one, rather than starting again); the
    search ends after a round at single items removes nothing. Deterministic. ``reduced`` hears of every
    smaller passing set as it is found (the best so far, should the test's budget run out)."""
    current = list(items)
    n = 2
    while len(current) >= 2:
        size = len(current)
        chunks = [current[size * k // n : size * (k + 1) // n] for k in range(n)]
        chunks = [c for c in chunks if c]
        if subsets:
            found = next((c for c in chunks if len(chunks) > 1 and test(frozenset(c))), None)
            if found is not None:
                current, n = found, 2
                if reduced is not None:
                    reduced(frozenset(current))
                continue
        removed = 0
        k = 0
        while k < len(chunks) and len(chunks) > 1:
            rest = [x for j, other in enumerate(chunks) if j != k for x in other]
            if test(frozenset(rest)):
                del chunks[k]
                current, removed = rest, removed + 1
                if reduced is not None:
                    reduced(frozenset(current))
            else:
                k += 1
        if removed:
            n = max(n - removed, 2)
        elif n >= size:
            break
        else:
            n = min(2 * n, size)
    return frozenset(current)


def trivial(text: str) -> bool:
    """A blank line or a ``//`` comment line (not continued): one that no build or run can depend on."""
    stripped = text.strip()
    return not stripped or stripped.startswith("//") and not stripped.endswith("\\")


def minimize(
    d: Diff,
    oracle: Oracle,
    budget: Budget | None = None,
    known: Callable[[str], bool | None] | None = None,
    hunks_only: bool = False,
) -> Result:
    """The smallest set of the reference's units found to pass ``oracle``. Three steps: ddmin over the hunks
    (chunks alone, then complements); the blank and comment lines of the hunks kept left out at once, when
    that passes; ddmin over the remaining lines (complements only: a few lines alone seldom repair a
    kernel, and 1-minimality needs only the complements). An answer ``known`` already has (by text; None:
    it has none) costs nothing; every other call spends ``budget``. ``hunks_only`` asks the oracle nothing
    past the hunk phase: the line phase goes on only as far as ``known`` answers it (as a search with no
    oracle call allowed would), and the result is where it then stands: the search's end (``minimal`` or
    ``whole``) when the known answers carry it there, else status ``budget``, minimality ``hunks``, with the
    smallest passing set the known answers reached. A later search over the same answers goes on from there."""
    budget = budget or Budget()
    seen: dict[str, bool] = {}
    fresh = [True]
    """Whether a question no known answer answers may be put to the oracle (not past the hunk phase of a
    ``hunks_only`` search)."""

    def test(units: frozenset[int]) -> bool:
        text = d.apply(units)
        key = text_hash(text)
        if key not in seen:
            answer = known(text) if known is not None else None
            if answer is None:
                if not fresh[0]:
                    raise _KeptOnly()
                budget.spend()
                answer = oracle(text)
            seen[key] = answer
        return seen[key]

    everything = d.all_units
    hunks_all = frozenset(range(len(d.hunks)))
    phase: Literal["start", "hunks", "lines", "done"] = "start"
    best: list[frozenset[int] | None] = [None]
    kept = [hunks_all]
    at_hunks = 0  # questions asked when the hunk phase ended

    def hunks_reduced(hs: frozenset[int]) -> None:
        kept[0], best[0] = hs, d.hunk_units(hs)

    def lines_reduced(units: frozenset[int]) -> None:
        best[0] = units

    try:
        if not d.units or test(frozenset()):
            return Result("start_passes", frozenset(), "done", "lines", frozenset(), len(seen),
                          "the broken start passes as it is: no fix needed")  # fmt: skip
        if not test(everything):
            return Result("reference_fails", None, "done", None, hunks_all, len(seen),
                          "the reference itself does not pass here, so no subset of its changes is known to")  # fmt: skip
        best[0] = everything
        phase = "hunks"
        hunks_reduced(ddmin(range(len(d.hunks)), lambda hs: test(d.hunk_units(hs)), reduced=hunks_reduced))
        phase = "lines"
        at_hunks = len(seen)
        fresh[0] = not hunks_only
        units = best[0]
        assert units is not None
        plain = frozenset(u for u in units if not trivial(_line(d, u)))
        if plain != units and plain and test(plain):
            lines_reduced(plain)
        units = best[0]
        assert units is not None
        lines_reduced(ddmin(sorted(units), test, subsets=False, reduced=lines_reduced))
    except _KeptOnly:
        chosen = best[0]
        assert chosen is not None
        if len(seen) == at_hunks:
            why = f"line phase not run yet (hunks only): {len(kept[0])} of {len(d.hunks)} hunks kept"
        else:
            why = (
                f"hunks only: the line phase went as far as the kept answers take it ({len(seen) - at_hunks} "
                f"of its questions answered): {_size(d, chosen)}"
            )
        return Result("budget", chosen, phase, "hunks", kept[0], len(seen), why)
    except BudgetExhausted as exc:
        where = {
            "start": "before the search began",
            "hunks": "in the hunk phase",
            "lines": "in the line phase",
        }
        level: Minimality | None = "hunks" if phase == "lines" else None
        return Result(
            "budget", best[0], phase, level, kept[0], len(seen), f"budget ran out {where[phase]}: {exc}"
        )
    chosen = best[0]
    assert chosen is not None
    if d.code_units <= chosen:
        why = "no line of code of the reference's diff can be left out: the only repair found is the whole reference"
        if chosen != everything:
            why += " (less some of its blank or comment lines)"
        return Result("whole", chosen, "done", "lines", kept[0], len(seen), why)
    return Result("minimal", chosen, "done", "lines", kept[0], len(seen), _size(d, chosen))


class _KeptOnly(Exception):
    """A ``hunks_only`` search's line phase reached a question no known answer answers."""


def _size(d: Diff, chosen: frozenset[int]) -> str:
    """A set of units in words: its lines and the hunks they touch, of the reference's."""
    hunks = len({d.units[u].hunk for u in chosen})
    return f"{len(chosen)} of {len(d.units)} changed lines of the reference, in {hunks} of {len(d.hunks)} hunks"


def _line(d: Diff, u: int) -> str:
    unit = d.units[u]
    return (d.old if unit.kind == "-" else d.new)[unit.line][0]
