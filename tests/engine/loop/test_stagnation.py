"""The stagnation detectors over folded states: each shown firing and not firing."""

from __future__ import annotations

from beavertui.engine.code.hashing import code_hash, normalise
from beavertui.engine.loop.stagnation import category_changes, detect, oscillation_jumps, submitted_hash
from beavertui.engine.session.events import Candidate, Event, ModelInfo, SessionHeader, TaskRef, Verdict
from beavertui.engine.session.protocol import Protocol, StagnationSettings
from beavertui.engine.session.state import fold

HEADER = SessionHeader(
    session_id="t",
    tool_version="0",
    task=TaskRef(
        id="t",
        family="f",
        label="buildability",
        corpus="c",
        layout="native",
        solution_file="s.cu",
        broken_start="",
    ),
    model=ModelInfo(name="m", kind="scripted"),
    protocol=Protocol(),
)
SETTINGS = StagnationSettings()


def attempts(*items: tuple[str | None, str, str]) -> list[Event]:
    """(code, category, signature) per iteration."""
    events: list[Event] = []
    for i, (code, category, signature) in enumerate(items, start=1):
        sha = code_hash(code) if code is not None else None
        events.append(Candidate(iteration=i, code=code, sha256=sha))
        events.append(
            Verdict(iteration=i, category=category, signature=signature, correct=category == "passed")
        )
    return events


def fired(*items: tuple[str | None, str, str]) -> list[str]:
    return [s.detector for s in detect(fold(HEADER, attempts(*items)), SETTINGS)]


def test_normalise_ignores_whitespace_and_comments_but_not_strings() -> None:
    a = "__global__ void k(int* x) {\n    x[0] = 1; // set\n}\n"
    b = "__global__  void k(int* x) {\r\n\n\tx[0] = 1;  /* set */\n}"
    assert normalise(a) == normalise(b)
    assert code_hash(a) == code_hash(b)
    assert code_hash('printf("// a");') != code_hash('printf("// b");')
    assert code_hash("x = 1\n", "python") != code_hash("  x = 1\n", "python")


def test_duplicate_code_fires_and_does_not() -> None:
    assert fired(("int a;", "buildability", "e1"), ("int a;", "buildability", "e2")) == ["duplicate_code"]
    assert fired(("int a;", "buildability", "e1"), ("int b;", "buildability", "e2")) == []
    # The paper's hash is of the exact submitted code: a changed space or comment is new code.
    assert fired(("int a;", "buildability", "e1"), ("int  a; // again", "buildability", "e2")) == []
    assert fired(("int a;\n", "buildability", "e1"), ("int a;", "buildability", "e2")) == []
    # No code twice is not "the same code".
    assert "duplicate_code" not in fired((None, "buildability", "no code"), (None, "buildability", "no code"))


def test_submitted_hash_is_sha256_of_the_exact_bytes() -> None:
    # `printf 'int a;' | sha256sum`
    assert submitted_hash("int a;") == "68ee7ca0e099b2c45f613f363e4911edbf3f696a3569f0ca666d433db8503c90"
    assert submitted_hash("int a; ") != submitted_hash("int a;")


def test_code_cycle_fires_and_does_not() -> None:
    assert fired(
        ("int a;", "buildability", "e1"),
        ("int b;", "functional_correctness", "m"),
        ("int a;", "buildability", "e1"),
    ) == ["code_cycle"]
    assert (
        fired(
            ("int a;", "buildability", "e1"),
            ("int b;", "buildability", "e2"),
            ("int c;", "buildability", "e3"),
        )
        == []
    )
    # A, A: duplicate, not a cycle.
    assert fired(
        ("int a;", "buildability", "e1"), ("int b;", "buildability", "e2"), ("int b;", "buildability", "e2")
    ) == ["duplicate_code"]


def test_category_oscillation_fires_and_does_not() -> None:
    # buildability and functional_correctness back and forth: jumps back at attempts 3, 4 and 5
    seq = [
        ("int a;", "buildability", "e"),
        ("int b;", "functional_correctness", "m"),
        ("int c;", "buildability", "e2"),
        ("int d;", "functional_correctness", "m2"),
        ("int e;", "buildability", "e3"),
    ]
    assert fired(*seq) == ["category_oscillation"]
    assert fired(*seq[:4]) == []  # two jumps back only
    assert oscillation_jumps([c for _, c, _ in seq]) == 3
    # Changes spread beyond the window of 5 do not count.
    spread = [
        ("1", "buildability", "a"),
        ("2", "functional_correctness", "b"),
        ("3", "buildability", "c"),
        ("4", "functional_correctness", "d"),
        ("5", "functional_correctness", "e"),
        ("6", "functional_correctness", "f"),
        ("7", "functional_correctness", "g"),
        ("8", "buildability", "h"),
    ]
    assert fired(*spread) == []


def fired_with(settings: StagnationSettings, *items: tuple[str | None, str, str]) -> list[str]:
    return [s.detector for s in detect(fold(HEADER, attempts(*items)), settings)]


def test_category_oscillation_counts_changes_as_the_release_does() -> None:
    """The release's harness/stagnation.py: >= 3 changes of category in the last 5, the window full.
    buildability > IMA > functional > buildability > IMA has four changes and fires; the stricter earlier
    rule (``jumps``) sees two jumps back and does not."""
    seq = [
        ("1", "buildability", "a"),
        ("2", "illegal_memory_access", "b"),
        ("3", "functional_correctness", "c"),
        ("4", "buildability", "d"),
        ("5", "illegal_memory_access", "e"),
    ]
    cats = [c for _, c, _ in seq]
    assert category_changes(cats) == 4 and oscillation_jumps(cats) == 2
    assert fired(*seq) == ["category_oscillation"]
    assert fired_with(StagnationSettings(oscillation_rule="jumps"), *seq) == []
    # four attempts hold three changes, but the release's window must be full
    assert category_changes(cats[:4]) == 3 and fired(*seq[:4]) == []
    # two changes in five: no
    calm = [("1", "buildability", "a"), ("2", "buildability", "b"), ("3", "timeout", "c")]
    calm += [("4", "timeout", "d"), ("5", "buildability", "e")]
    assert category_changes([c for _, c, _ in calm]) == 2 and "category_oscillation" not in fired(*calm)
    # the rule is part of the protocol's label when it is not the default
    from beavertui.engine.session.protocol import stagnation_label

    assert stagnation_label(StagnationSettings()) == "stop"
    assert stagnation_label(StagnationSettings(oscillation_rule="jumps")) == "stop:osc=jumps"


def test_steady_progress_never_oscillates() -> None:
    """The issue's sequence: build error -> crash -> wrong result -> correct (here correct but below an
    in-loop gate, so the loop goes on and the detectors run): no jump goes back, nothing fires."""
    progress = [
        ("1", "buildability", "error: x"),
        ("2", "illegal_memory_access", "Invalid __global__ read"),
        ("3", "functional_correctness", "mismatch"),
        ("4", "passed", ""),
    ]
    assert oscillation_jumps([c for _, c, _ in progress]) == 0
    assert "category_oscillation" not in fired(*progress)
    # Four different failing categories in a row are progress too, not oscillation.
    assert oscillation_jumps(["buildability", "integration", "illegal_memory_access", "timeout"]) == 0
    # A correct attempt between failures is not a failing category: B, passed, F, B, F has two jumps.
    assert (
        oscillation_jumps(["buildability", "passed", "functional_correctness", "buildability", "timeout"])
        == 1
    )
    assert (
        oscillation_jumps(
            ["buildability", "passed", "functional_correctness", "buildability", "functional_correctness"]
        )
        == 2
    )


def test_no_progress_fires_and_does_not() -> None:
    same = ("illegal_memory_access", "Invalid __global__ read of size <N>")
    assert fired(("1", *same), ("2", *same), ("3", *same)) == ["no_progress"]
    assert fired(("1", *same), ("2", *same)) == []
    assert fired(("1", *same), ("2", "illegal_memory_access", "other"), ("3", *same)) == []


def test_no_progress_below_gate_needs_no_speedup_gain() -> None:
    def slow(i: int, speed: float) -> list[Event]:
        return [
            Candidate(iteration=i, code=str(i), sha256=code_hash(str(i))),
            Verdict(
                iteration=i, category="passed", signature="", correct=True, speedup=speed, reason="below gate"
            ),
        ]

    improving = fold(HEADER, [*slow(1, 0.2), *slow(2, 0.3), *slow(3, 0.5)])
    assert detect(improving, SETTINGS) == []
    flat = fold(HEADER, [*slow(1, 0.3), *slow(2, 0.5), *slow(3, 0.4)])
    assert [s.detector for s in detect(flat, SETTINGS)] == ["no_progress"]


def test_disabled_detectors_do_not_run() -> None:
    state = fold(HEADER, attempts(("int a;", "buildability", "e"), ("int a;", "buildability", "e")))
    only_cycle = StagnationSettings(enabled=("code_cycle",))
    assert detect(state, only_cycle) == []
