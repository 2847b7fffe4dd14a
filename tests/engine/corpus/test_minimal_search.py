"""The minimal-fix search (engine/corpus/minimal_search.py) against oracles built here, whose answers are known.

Properties over random broken starts, references and oracles (hypothesis): the units give the broken start and
the reference back; the result passes the oracle, is 1-minimal at the line level (leaving out any one of its
lines fails), is never larger than the whole diff, and is stored as a patch that gives it back and marks
exactly its lines; a search cut by its budget and run again over the kept answers ends where an uncut one
ends, having made no more fresh oracle calls in all.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from beavertui.engine.analysis.edits import hunks as edit_hunks
from beavertui.engine.corpus import patch
from beavertui.engine.corpus.minimal_search import (
    Budget,
    BudgetExhausted,
    Diff,
    ddmin,
    diff,
    minimize,
    text_hash,
    unified,
)

LINES = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "", "  g", "h;", "}"]), max_size=12)


def _text(lines: list[str], end: bool) -> str:
    return "\n".join(lines) + ("\n" if end and lines else "")


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, frozenset[str], frozenset[str]]:
    """A broken start, a reference, lines the oracle requires and lines it forbids."""
    broken = _text(draw(LINES), draw(st.booleans()))
    reference = _text(draw(LINES), draw(st.booleans()))
    ref_lines = set(reference.splitlines())
    need = (
        frozenset(draw(st.sets(st.sampled_from(sorted(ref_lines)), max_size=3))) if ref_lines else frozenset()
    )
    absent = set(broken.splitlines()) - ref_lines
    banned = frozenset(draw(st.sets(st.sampled_from(sorted(absent)), max_size=2))) if absent else frozenset()
    return broken, reference, need, banned


def oracle_of(need: frozenset[str], banned: frozenset[str]) -> tuple[list[str], object]:
    asked: list[str] = []

    def oracle(text: str) -> bool:
        asked.append(text)
        lines = set(text.splitlines())
        return need <= lines and not (banned & lines)

    return asked, oracle


@settings(max_examples=200, deadline=None)
@given(cases())
def test_no_units_give_the_broken_start_and_all_give_the_reference(case: tuple) -> None:
    broken, reference, *_ = case
    d = diff(broken, reference)
    assert d.apply(frozenset()) == broken
    assert d.apply(d.all_units) == reference
    assert len(d.units) == sum(h.old_end - h.old_start + h.new_end - h.new_start for h in d.hunks)


@settings(max_examples=200, deadline=None)
@given(cases())
def test_the_result_passes_is_one_minimal_and_no_larger_than_the_diff(case: tuple) -> None:
    broken, reference, need, banned = case
    asked, oracle = oracle_of(need, banned)
    d = diff(broken, reference)
    assume(not oracle(broken) and oracle(reference))  # type: ignore[operator]
    result = minimize(d, oracle)  # type: ignore[arg-type]
    texts = asked[2:]  # each distinct text is asked once
    assert len(texts) == len(set(texts)) == result.asked
    assert result.status in ("minimal", "whole") and result.phase == "done"
    assert result.chosen is not None and result.chosen <= d.all_units
    fixed = d.apply(result.chosen)
    assert oracle(fixed)  # type: ignore[operator]
    for u in result.chosen:  # 1-minimal: no single line can be left out
        assert not oracle(d.apply(result.chosen - {u}))  # type: ignore[operator]
    assert (result.status == "whole") == (d.code_units <= result.chosen)
    # the stored form: a unified diff the corpus's own applier turns back into the fixed text
    assert patch.apply(broken, unified(broken, fixed)) == fixed
    if result.chosen:
        assert patch.apply(broken, d.unified(result.chosen)) == fixed


def _marked(text: str) -> int:
    """Lines a unified diff marks removed or added (its '---' / '+++' header left out)."""
    return sum(line[:1] in "-+" for line in text.splitlines() if not line.startswith(("--- ", "+++ ")))


def _gains_a_newline(d: Diff, chosen: frozenset[int]) -> bool:
    """The broken start's last line has no newline, no chosen unit removes it, and a chosen added line is
    placed after it: in the fixed text it ends with a newline, a change a unified diff marks."""
    old, units, hunks = d.old, d.units, d.hunks
    if not old or old[-1][1]:
        return False
    for hunk in hunks:
        order = list(hunk.units)
        at = next(
            (k for k, u in enumerate(order) if units[u].kind == "-" and units[u].line == len(old) - 1), None
        )
        if at is not None:
            return order[at] not in chosen and any(units[u].kind == "+" and u in chosen for u in order[at:])
    return False


@settings(max_examples=300, deadline=None)
@given(cases(), st.sets(st.integers(0, 40), min_size=1))
@example(("b\n}\nb\n", "c\n", frozenset(), frozenset()), {0, 2})
@example(("y", "p\nq\n", frozenset(), frozenset()), {2})
def test_the_patch_of_an_edit_marks_its_units_and_gives_the_fix_back(case: tuple, drawn: set[int]) -> None:
    broken, reference, *_ = case
    d = diff(broken, reference)
    chosen = frozenset(drawn) & d.all_units
    assume(chosen)
    fixed = d.apply(chosen)
    text = d.unified(chosen)
    assert patch.apply(broken, text) == fixed
    # exactly the chosen units, unless the start's last line gains its newline (marked removed and added)
    assert _marked(text) == len(chosen) + 2 * _gains_a_newline(d, frozenset(chosen))
    assert text.startswith("--- broken_start\n+++ minimal_fix\n@@ -")


def test_a_fix_inside_a_block_is_written_as_the_search_made_it_not_as_a_re_diff_finds_it() -> None:
    # the broken start's first line removed and the reference's line added where the middle one was: the
    # search's edit is 2 lines; difflib's re-diff of the two texts matches the last line and marks 4
    broken, reference = "b\n}\nb\n", "c\n"
    d = diff(broken, reference)
    assert [(d.units[u].kind, d.units[u].line) for u in d.hunks[0].units] == [
        ("-", 0),
        ("-", 1),
        ("+", 0),
        ("-", 2),
    ]
    fixed = d.apply({0, 2})
    assert fixed == "}\nc\nb\n"
    assert _marked(unified(broken, fixed)) == 4
    assert d.unified({0, 2}) == "--- broken_start\n+++ minimal_fix\n@@ -1,3 +1,3 @@\n-b\n }\n+c\n b\n"
    # a kept last line without a newline that an added line follows gains one: removed and added again
    d = diff("y", "p\nq\n")
    assert d.apply({2}) == "y\nq\n"
    assert (
        d.unified({2})
        == "--- broken_start\n+++ minimal_fix\n@@ -1 +1,2 @@\n-y\n\\ No newline at end of file\n+y\n+q\n"
    )
    with pytest.raises(ValueError, match="no unit chosen"):
        d.unified(set())


@settings(max_examples=100, deadline=None)
@given(cases(), st.integers(min_value=0, max_value=6))
def test_a_search_cut_by_its_budget_goes_on_over_its_kept_answers(case: tuple, cut: int) -> None:
    broken, reference, need, banned = case
    _, oracle = oracle_of(need, banned)
    assume(not oracle(broken) and oracle(reference))  # type: ignore[operator]
    d = diff(broken, reference)
    whole = minimize(d, oracle)  # type: ignore[arg-type]
    kept: dict[str, bool] = {}

    def keeping(text: str) -> bool:
        kept[text_hash(text)] = oracle(text)  # type: ignore[operator]
        return kept[text_hash(text)]

    calls = 0
    result = None
    for _ in range(100):
        budget = Budget(max_calls=cut + 1)
        result = minimize(d, keeping, budget, known=lambda t: kept.get(text_hash(t)))
        calls += budget.calls
        if result.status != "budget":
            break
        assert result.chosen is None or oracle(d.apply(result.chosen))  # type: ignore[operator]
    assert result is not None and result.status == whole.status and result.chosen == whole.chosen
    assert calls == len(kept) == whole.asked


def test_a_one_line_fix_inside_a_rewritten_block_is_found_at_its_place() -> None:
    broken = "int main() {\n  // add one\n  int y = x +;\n  return y;\n}\n"
    reference = "int main() {\n  // add one to x\n  int y = x + 1;\n  return (y);\n}\n"
    d = diff(broken, reference)
    assert len(d.hunks) == 1 and len(d.units) == 6 and len(d.code_units) == 4
    asked: list[str] = []

    def oracle(text: str) -> bool:
        asked.append(text)
        return "x +;" not in text and "int y = x + 1;" in text

    result = minimize(d, oracle)
    assert result.status == "minimal" and result.minimality == "lines" and len(result.chosen or ()) == 2
    # the new line where the old one was; the comment's change left out in one try
    assert d.apply(result.chosen or ()) == "int main() {\n  // add one\n  int y = x + 1;\n  return y;\n}\n"
    # start, reference, without the comment; without the return's change; without either line of the fix
    assert len(asked) == result.asked == 7
    # the reference's only change of code, with its comment's: nothing to leave out, whole
    whole = minimize(diff(broken, reference.replace("(y)", "y")), oracle)
    assert whole.status == "whole" and "less some of its blank or comment lines" in whole.why


def test_statuses_when_the_start_passes_or_the_reference_fails() -> None:
    d = diff("a\nb\n", "a\nc\n")
    assert minimize(d, lambda t: True).status == "start_passes"
    r = minimize(d, lambda t: False)
    assert r.status == "reference_fails" and r.chosen is None and "reference itself" in r.why
    r = minimize(d, lambda t: t == "a\nc\n")
    assert r.status == "whole" and r.chosen == d.all_units


def test_the_budget_says_which_phase_it_cut_and_keeps_the_best_so_far() -> None:
    broken = "".join(f"x{i}\n" for i in range(8))
    reference = "".join(f"y{i}\n" if i % 2 else f"x{i}\n" for i in range(8))
    d = diff(broken, reference)
    assert len(d.hunks) == 4
    oracle = lambda t: "y3" in t  # noqa: E731
    r = minimize(d, oracle, Budget(max_calls=2))
    assert r.status == "budget" and r.phase == "hunks" and r.chosen == d.all_units
    assert "hunk phase" in r.why and "2 oracle calls" in r.why
    r = minimize(d, oracle, Budget(deadline=0.0, clock=lambda: 1.0))
    assert r.status == "budget" and r.phase == "start" and r.chosen is None and "wall time" in r.why
    full = minimize(d, oracle)
    # the new line alone, placed after the old line it was paired with
    assert full.status == "minimal" and d.apply(full.chosen or ()) == broken.replace("x3\n", "x3\ny3\n")


def test_ddmin_over_items_with_a_known_answer() -> None:
    calls: list[frozenset[int]] = []

    def test(s: frozenset[int]) -> bool:
        calls.append(s)
        return {3, 11} <= s

    assert ddmin(range(16), test) == {3, 11}
    assert ddmin([5], lambda s: True) == {5}
    with pytest.raises(BudgetExhausted):
        Budget(max_calls=0).spend()


def test_changed_lines_count_as_edit_precision_counts_them() -> None:
    broken = "a\n\nb\nc\nd\n"
    reference = "a\nB\n\nc\nX\nY\nZ\n"
    d = diff(broken, reference)
    assert d.changed_lines(d.all_units) == sum(h.size for h in edit_hunks(broken, reference))
    assert d.changed_lines(frozenset()) == 0


@settings(max_examples=100, deadline=None)
@given(cases())
@example(
    ("b\nb", "b\nb\na\na", frozenset({"a"}), frozenset())
)  # the hunk phase leaves out a line of its hunk
def test_a_hunks_only_search_ends_after_its_hunk_phase_and_a_full_one_goes_on(case: tuple) -> None:
    broken, reference, need, banned = case
    _, oracle = oracle_of(need, banned)
    assume(not oracle(broken) and oracle(reference))  # type: ignore[operator]
    d = diff(broken, reference)
    kept: dict[str, bool] = {}

    def keeping(text: str) -> bool:
        kept[text_hash(text)] = oracle(text)  # type: ignore[operator]
        return kept[text_hash(text)]

    first = minimize(d, keeping, hunks_only=True)
    asked = len(kept)
    full = minimize(d, keeping, known=lambda t: kept.get(text_hash(t)))
    assert full == minimize(d, oracle)  # type: ignore[arg-type]
    assert len(kept) == full.asked and asked <= full.asked
    if first.phase == "done":  # a line phase that has no question to ask (a one-line hunk kept) ends
        assert first == full and asked == full.asked
        return
    assert (first.status, first.phase, first.minimality) == ("budget", "lines", "hunks")
    assert first.why.startswith("line phase not run yet (hunks only)") and asked < full.asked
    # the hunks kept, less what the hunk phase's last try could leave out of them (a line both removed and
    # added back: broken 'b' without its newline, reference 'b' with one)
    assert first.chosen <= d.hunk_units(first.hunks) and oracle(d.apply(first.chosen))  # type: ignore[operator]
    assert {d.units[u].hunk for u in first.chosen} == first.hunks
    for h in first.hunks:  # 1-minimal over hunks
        assert not oracle(d.apply(d.hunk_units(first.hunks - {h})))  # type: ignore[operator]


@settings(max_examples=150, deadline=None)
@given(cases(), st.integers(0, 60))
def test_a_hunks_only_search_goes_over_the_line_phase_as_far_as_the_kept_answers_take_it(
    case: tuple, cut: int
) -> None:
    """Over the answers a full search kept before it was cut after ``cut`` questions, a hunks-only search asks
    the oracle only its hunk phase's questions and stands where a replay of those answers stands: at the
    full search's end when they reach it, never back at the hunk phase's set when they reach further."""
    broken, reference, need, banned = case
    _, oracle = oracle_of(need, banned)
    assume(not oracle(broken) and oracle(reference))  # type: ignore[operator]
    d = diff(broken, reference)
    order: list[str] = []
    answers: dict[str, bool] = {}

    def keeping(text: str) -> bool:
        order.append(text_hash(text))
        answers[order[-1]] = oracle(text)  # type: ignore[operator]
        return answers[order[-1]]

    full = minimize(d, keeping)
    kept = {k: answers[k] for k in order[:cut]}
    fresh: list[str] = []

    def asking(text: str) -> bool:
        fresh.append(text_hash(text))
        return oracle(text)  # type: ignore[operator,no-any-return]

    out = minimize(d, asking, known=lambda t: kept.get(text_hash(t)), hunks_only=True)
    hunk_phase = minimize(d, oracle, hunks_only=True).asked  # type: ignore[arg-type]
    assert set(fresh) <= set(order[:hunk_phase]) and not set(fresh) & set(kept)
    if cut >= len(order):
        assert out == full and not fresh
    both = {**kept, **{k: answers[k] for k in order[:hunk_phase]}}

    def never(text: str) -> bool:
        raise AssertionError("a replay asked a fresh question")

    replay = minimize(d, never, Budget(max_calls=0), known=lambda t: both.get(text_hash(t)))
    assert (out.status, out.chosen, out.phase, out.minimality, out.hunks, out.asked) == (
        replay.status, replay.chosen, replay.phase, replay.minimality, replay.hunks, replay.asked,
    )  # fmt: skip
    if out.status == "budget":
        assert out.minimality == "hunks" and out.chosen is not None and oracle(d.apply(out.chosen))  # type: ignore[operator]
        lines_asked = out.asked - hunk_phase
        assert ("line phase not run yet" in out.why) == (lines_asked == 0)
        if lines_asked:
            assert f"the kept answers take it ({lines_asked} of its questions answered)" in out.why
