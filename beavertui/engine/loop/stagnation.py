"""The four stagnation detectors: is the model stuck? Evaluated over the reduced SessionState.

Each detector looks at the attempts so far and says whether it fires after the latest one; the loop
records a Stalled event for each firing detector and may stop (protocol.stagnation.stop). Where the paper's
text and the release's code (harness/stagnation.py) differ, the code that produced the paper's numbers is
followed, except where said (docs/metrics.md):
- duplicate_code and code_cycle compare the SHA-256 of the exact submitted code (``submitted_hash``): the
  paper's text; the release truncates the hash to 64 bits.
- category_oscillation counts changes of category in the last 5 judged attempts and fires at 3 (the
  release's rule; the paper's text says "back-and-forth jumps between error categories"). The stricter rule
  beavertui used before, jumps back to a failing category already seen (``oscillation_rule = "jumps"``), is
  kept as a named option and is a departure from the release.
- no_progress asks for one category and one error signature in the last 3 attempts: the paper's text and
  the release's docstring; a departure from the release's code, which compares categories only.
``code.hashing.normalise`` (comments and spacing dropped) is only the key of Candidate.sha256 and of the
recorded toolchain's recordings, never what the detectors compare. This module must not run anything or
change the state.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable

from beavertui.engine.judge.categories import FAILING_CATEGORIES
from beavertui.engine.session.events import Stalled
from beavertui.engine.session.protocol import Detector, StagnationSettings
from beavertui.engine.session.state import AttemptState, SessionState


def submitted_hash(code: str) -> str:
    """SHA-256 (hex) of the code exactly as submitted: one changed byte, comment or space is new code."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def _submitted(a: AttemptState) -> str | None:
    return (
        submitted_hash(a.candidate.code) if a.candidate is not None and a.candidate.code is not None else None
    )


def _judged(state: SessionState) -> list[AttemptState]:
    return [a for a in state.attempts if a.verdict is not None]


def duplicate_code(state: SessionState, settings: StagnationSettings) -> str | None:
    """The latest candidate is byte for byte the code submitted just before it."""
    attempts = [a for a in state.attempts if a.candidate is not None]
    if len(attempts) < 2:
        return None
    last, prev = attempts[-1], attempts[-2]
    h = _submitted(last)
    if h is not None and h == _submitted(prev):
        return f"iteration {last.iteration} is the same code as iteration {prev.iteration}"
    return None


def code_cycle(state: SessionState, settings: StagnationSettings) -> str | None:
    """The latest candidate differs from the previous one but is byte for byte an earlier one (A, B, A)."""
    attempts = [a for a in state.attempts if a.candidate is not None]
    if len(attempts) < 3:
        return None
    last = attempts[-1]
    h = _submitted(last)
    if h is None or _submitted(attempts[-2]) == h:
        return None
    for earlier in reversed(attempts[:-2]):
        if _submitted(earlier) == h:
            return f"iteration {last.iteration} is the same code as iteration {earlier.iteration}"
    return None


def oscillation_jumps(categories: list[str]) -> int:
    """Back-and-forth jumps in a sequence of categories: changes among the failing ones (a correct attempt
    is left out) that go back to a failing category already seen earlier in the sequence.

    Steady progress never jumps back: buildability > illegal_memory_access > functional_correctness >
    passed has none; buildability > functional_correctness > buildability > functional_correctness >
    buildability has three.
    """
    failing = [c for c in categories if c in FAILING_CATEGORIES]
    jumps = 0
    for i, (a, b) in enumerate(itertools.pairwise(failing)):
        if a != b and b in failing[:i]:
            jumps += 1
    return jumps


def category_changes(categories: list[str]) -> int:
    """Changes of category between consecutive attempts (the release's count): buildability >
    illegal_memory_access > functional_correctness > buildability > illegal_memory_access has four."""
    return sum(a != b for a, b in itertools.pairwise(categories))


def category_oscillation(state: SessionState, settings: StagnationSettings) -> str | None:
    """``changes`` (default, the release's): at least N changes of category among the last W judged attempts,
    the window full (N=3, W=5). ``jumps`` (the stricter earlier rule): at least N back-and-forth jumps among
    failing categories within the last W attempts."""
    window = _judged(state)[-settings.oscillation_window :]
    cats = [a.verdict.category for a in window if a.verdict is not None]
    if settings.oscillation_rule == "jumps":
        jumps = oscillation_jumps(cats)
        if jumps >= settings.oscillation_changes:
            return f"{jumps} back-and-forth jumps in the last {len(cats)} attempts: {' > '.join(cats)}"
        return None
    if len(cats) < settings.oscillation_window:
        return None
    changes = category_changes(cats)
    if changes >= settings.oscillation_changes:
        return f"{changes} changes of category in the last {len(cats)} attempts: {' > '.join(cats)}"
    return None


def no_progress(state: SessionState, settings: StagnationSettings) -> str | None:
    """The last N attempts (3 by default) failed with one category and one error signature.

    Correct attempts below the speed gate count as the same only while the speedup does not improve.
    """
    run = _judged(state)[-settings.no_progress_run :]
    if len(run) < settings.no_progress_run:
        return None
    verdicts = [a.verdict for a in run if a.verdict is not None]
    first = verdicts[0]
    if any(v.success for v in verdicts):
        return None
    if any(v.category != first.category or v.signature != first.signature for v in verdicts):
        return None
    if first.correct:
        speeds = [v.speedup or 0.0 for v in verdicts]
        if speeds[-1] > max(speeds[:-1]):
            return None
        return f"{len(verdicts)} correct attempts below the gate without a faster one"
    sig = first.signature or first.reason or first.category
    return f"{len(verdicts)} attempts in a row: {first.category}: {sig}"


DETECTOR_FUNCTIONS: dict[Detector, Callable[[SessionState, StagnationSettings], str | None]] = {
    "duplicate_code": duplicate_code,
    "code_cycle": code_cycle,
    "category_oscillation": category_oscillation,
    "no_progress": no_progress,
}


def detect(state: SessionState, settings: StagnationSettings) -> list[Stalled]:
    """Stalled events for every enabled detector that fires after the latest attempt, in DETECTORS order."""
    if not state.attempts:
        return []
    iteration = state.attempts[-1].iteration
    out: list[Stalled] = []
    for name, fn in DETECTOR_FUNCTIONS.items():
        if name not in settings.enabled:
            continue
        detail = fn(state, settings)
        if detail is not None:
            out.append(Stalled(iteration=iteration, detector=name, detail=detail))
    return out
