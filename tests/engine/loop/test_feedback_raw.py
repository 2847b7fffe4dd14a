"""Feedback level L3_raw against the release's own code: the note a session sends is the text the release's
harness/feedback.py builds in its raw mode (``_feedback_generic``) from the same build and test output.

The release's answers are recorded in tests/data/release_harness (tests/release_oracle.py says how).
"""

from __future__ import annotations

from typing import Any

import pytest

from beavertui.engine.loop.prompts import feedback
from beavertui.engine.session.events import Built, Candidate, Ran, Request, Verdict
from beavertui.engine.session.facts import StageResult
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.state import AttemptState, fold
from tests.engine.loop.test_loop_session import reply, run
from tests.release_oracle import release


def release_feedback() -> Any:
    return release("feedback")


def _release_note(attempt: AttemptState) -> str:
    """What the release sends at level 3 in raw mode, from the attempt's recorded build and test output."""
    assert attempt.build is not None and attempt.candidate is not None and attempt.candidate.code
    build_output = attempt.build.result.log.strip()
    test_output = attempt.run.result.log.strip() if attempt.run is not None else None
    note = release_feedback().build_feedback(
        {"category": "unused in raw mode"},
        build_output,
        test_output,
        attempt.candidate.code,
        level=3,
        mode="raw",
    )
    assert isinstance(note, str)
    return note


@pytest.mark.parametrize("first", ["syntax", "wrong"])
def test_l3_raw_sends_the_releases_raw_note(first: str) -> None:
    """A build error (syntax) and a wrong result (wrong, built and ran): the second request's last message
    is the release's raw note, byte for byte; L3's note on the same attempt is another text."""
    header, events = run([reply(first), reply("naive")], Protocol(feedback="L3_raw"))
    assert header.protocol.feedback == "L3_raw"
    state = fold(header, events)
    attempt = state.attempts[0]
    note = [e for e in events if isinstance(e, Request)][1].messages[-1].content
    assert note == _release_note(attempt)
    assert note.startswith("Your previous solution did not pass. Here is the feedback:")
    stage = attempt.build if first == "syntax" else attempt.run
    assert stage is not None and stage.result.log.strip() and stage.result.log.strip() in note
    l3 = feedback(attempt, "L3", "cuda")
    assert l3 != note and "Outcome:" in l3 and "Outcome:" not in note


def _attempt(build_log: str, run_log: str | None, code: str, timed_out: bool = False) -> AttemptState:
    build = Built(iteration=1, result=StageResult(stage="build", command="nvcc", rc=0, log=build_log))
    ran = None
    if run_log is not None:
        rc = None if timed_out else 1
        ran = Ran(
            iteration=1,
            result=StageResult(stage="run", command="./t", rc=rc, timed_out=timed_out, log=run_log),
        )
    v = Verdict(iteration=1, category="functional_correctness", signature="x", correct=False)
    return AttemptState(
        iteration=1, candidate=Candidate(iteration=1, code=code), build=build, run=ran, verdict=v
    )


def test_l3_raw_cuts_long_output_and_code_as_the_release_does() -> None:
    """Output beyond 3,000 characters keeps its first and last 1,500; code beyond 2,000 its halves."""
    build_log = "\n".join(f"nvcc line {i}: warning: something" for i in range(60))
    run_log = "\n".join(f"mismatch at {i}: expected {i} got {i + 1}" for i in range(200))
    code = "\n".join(f"__global__ void k{i}(float* x) {{ x[{i}] = {i}; }}" for i in range(80))
    a = _attempt(build_log, run_log, code)
    note = feedback(a, "L3_raw", "cuda")
    expected = release_feedback()._feedback_generic(build_log, run_log, code)
    assert note == expected
    assert "...[truncated]..." in note and "... [truncated] ..." in note
    assert len(build_log + run_log) > 3000 and len(code) > 2000


def test_l3_raw_time_limits_read_as_the_harness_markers_and_components_filter() -> None:
    a = _attempt("compiled fine", "partial output before the kill", "int x;", timed_out=True)
    note = feedback(a, "L3_raw", "cuda")
    assert note == release_feedback()._feedback_generic(
        "compiled fine", "[TEST TIMEOUT] Execution timed out", "int x;"
    )
    only_build = feedback(a, "L3_raw", "cuda", components=("compiler",))
    assert "[TEST TIMEOUT]" not in only_build and "compiled fine" in only_build
    only_run = feedback(a, "L3_raw", "cuda", components=("runtime",))
    assert "[TEST TIMEOUT]" in only_run and "compiled fine" not in only_run


def test_l3_raw_refuses_components_it_has_not() -> None:
    Protocol(feedback="L3_raw", feedback_components=("compiler",))
    with pytest.raises(ValueError, match="would change nothing"):
        Protocol(feedback="L3_raw", feedback_components=("sanitizer",))
