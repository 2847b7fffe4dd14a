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

    def unified(
        self, chosen: Iterable[int], old_name: str = "broken_start", new_name: str = "minimal_fix"
    ) -> str:
        """The edit ``chosen`` makes, as a unified diff (3 lines of context) in the form engine/corpus/patch.py
        applies: the lines ``apply`` places, the equal runs and each hunk's old lines left in it as context,
        the chosen removed lines as ``-`` and the chosen added lines as ``+`` (removed before added within a
        run of changes). It marks exactly the chosen units, except that a broken start's last line without a
        newline, kept and followed by an added line, is marked removed and added again (it gains the newline).
        Raises ValueError when the patch would not give ``apply(chosen)`` back, or when nothing is chosen."""
        pick = frozenset(chosen)
        if not pick:
            raise ValueError("no unit chosen: no edit to write")
        placed: list[tuple[str, tuple[str, str]]] = []
        for k, hunk in enumerate(self.hunks):
            i1, i2 = self._equal[k]
            placed.extend((" ", line) for line in self.old[i1:i2])
            for u in hunk.units:
                unit = self.units[u]
                if unit.kind == "-":
                    placed.append(("-" if u in pick else " ", self.old[unit.line]))
                elif u in pick:
                    placed.append(("+", self.new[unit.line]))
        i1, i2 = self._equal[-1]
        placed.extend((" ", line) for line in self.old[i1:i2])
        # the endings the lines have in the fixed text (``_join``): a line without one gets a newline unless
        # it is the fixed text's last. A kept old line without one (the broken start's last) that is not the
        # fixed text's last cannot stay context: the newline it gains is a change
        last_new = max((k for k, (tag, _) in enumerate(placed) if tag != "-"), default=-1)
        entries: list[tuple[str, str, str]] = []
        for k, (tag, (body, end)) in enumerate(placed):
            if tag == " " and not end and k != last_new:
                entries += [("-", body, end), ("+", body, "\n")]
            elif tag == "+" and not end and k != last_new:
                entries.append(("+", body, "\n"))
            else:
                entries.append((tag, body, end))
        return _checked(
            _join(self.old), _write(_removed_first(entries), old_name, new_name), self.apply(pick)
        )


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
    """``diff -u`` of two texts (difflib's, 3 lines of context), in the form engine/corpus/patch.py applies (a
    last line without a newline is marked). Not minimal: for a fix the search found, ``Diff.unified`` writes
    its own edit. Raises ValueError when the patch would not give ``fixed`` back."""
    # lines compared with their endings, so that a last line without a newline differs from the same line
    # with one (GNU diff's rule), and written without them
    a, b = _split(broken), _split(fixed)
    matcher = difflib.SequenceMatcher(None, [t + e for t, e in a], [t + e for t, e in b], autojunk=False)
    entries: list[tuple[str, str, str]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            entries.extend((" ", t, e) for t, e in a[i1:i2])
        else:
            entries.extend(("-", t, e) for t, e in a[i1:i2])
            entries.extend(("+", t, e) for t, e in b[j1:j2])
    return _checked(broken, _write(entries, old_name, new_name), fixed)


def _removed_first(entries: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Each run of changes (no context line between) with its removed lines before its added ones, as
    ``diff -u`` writes them: the same edit (the added lines keep their order)."""
    out: list[tuple[str, str, str]] = []
    run: list[tuple[str, str, str]] = []
    for entry in [*entries, (" ", "", "")]:
        if entry[0] == " ":
            out += [e for e in run if e[0] == "-"] + [e for e in run if e[0] == "+"]
            run = []
            out.append(entry)
        else:
            run.append(entry)
    return out[:-1]


def _range(start: int, count: int) -> str:
    """A hunk header's range as ``diff -u`` writes it (0-based ``start``; an empty range names the line before)."""
    if count == 1:
        return str(start + 1)
    return f"{start + 1 if count else start},{count}"


def _write(entries: Sequence[tuple[str, str, str]], old_name: str, new_name: str, n: int = 3) -> str:
    """(tag, line without its ending, its ending) lines of an edit as a unified diff with ``n`` lines of
    context, hunks split where more than 2n context lines lie between changes (difflib's grouping); a line
    without an ending is followed by the "No newline" marker."""
    at: list[tuple[int, int]] = []  # each entry's 0-based old and new line
    old = new = 0
    for tag, _, _ in entries:
        at.append((old, new))
        old, new = old + (tag != "+"), new + (tag != "-")
    groups: list[list[int]] = []  # [first, last] change of each hunk
    for k, (tag, _, _) in enumerate(entries):
        if tag == " ":
            continue
        if groups and k - groups[-1][1] - 1 <= 2 * n:
            groups[-1][1] = k
        else:
            groups.append([k, k])
    lines = [f"--- {old_name}", f"+++ {new_name}"]
    for first, last in groups:
        lo, hi = max(first - n, 0), min(last + n + 1, len(entries))
        body = entries[lo:hi]
        olds, news = sum(t != "+" for t, _, _ in body), sum(t != "-" for t, _, _ in body)
        lines.append(f"@@ -{_range(at[lo][0], olds)} +{_range(at[lo][1], news)} @@")
        for tag, text, end in body:
            lines.append(tag + text)
            if not end:
                lines.append("\\ No newline at end of file")
    return "\n".join(lines) + "\n"


def _checked(broken: str, text: str, fixed: str) -> str:
    """``text``, once the corpus's own applier turns ``broken`` into ``fixed`` with it; ValueError otherwise."""
    from beavertui.engine.corpus import patch

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
