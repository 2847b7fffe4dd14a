"""The four stagnation detectors (issue 3): is the model stuck? Evaluated over the reduced SessionState.

Each detector looks at the attempts so far and says whether it fires after the latest one; the loop
records a Stalled event for each firing detector and may stop (protocol.stagnation.stop). ``normalise``
defines "the same code" for Candidate.sha256 and for the recorded toolchain's keys. This module must not
run anything or change the state.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable

from beavertui.engine.session.events import Stalled
from beavertui.engine.session.protocol import Detector, StagnationSettings
from beavertui.engine.session.state import AttemptState, SessionState

_C_TOKEN = re.compile(
    r'"(?:\\.|[^"\\\n])*"'  # string literal
    r"|'(?:\\.|[^'\\\n])*'"  # char literal
    r"|//[^\n]*"  # line comment
    r"|/\*.*?\*/",  # block comment
    re.DOTALL,
)


def _drop_c_comments(code: str) -> str:
    def keep(m: re.Match[str]) -> str:
        text = m.group(0)
        return " " if text.startswith("/") else text

    return _C_TOKEN.sub(keep, code)


def normalise(code: str, language: str = "cuda") -> str:
    """Code with differences that cannot change behaviour removed.

    All languages: line endings unified, trailing whitespace and blank lines dropped. C, C++ and CUDA:
    comments removed and runs of spaces and tabs folded to one (indentation means nothing there).
    Python keeps its indentation and comments.
    """
    code = code.replace("\r\n", "\n").replace("\r", "\n")
    if language != "python":
        code = _drop_c_comments(code)
        lines = [" ".join(line.split()) for line in code.split("\n")]
    else:
        lines = [line.rstrip() for line in code.split("\n")]
    return "\n".join(line for line in lines if line.strip()) + "\n"


def code_hash(code: str, language: str = "cuda") -> str:
    """sha256 (hex) of the normalised code."""
    return hashlib.sha256(normalise(code, language).encode("utf-8")).hexdigest()


def _judged(state: SessionState) -> list[AttemptState]:
    return [a for a in state.attempts if a.verdict is not None]


def duplicate_code(state: SessionState, settings: StagnationSettings) -> str | None:
    """The latest candidate is the same code as the one just before it."""
    attempts = [a for a in state.attempts if a.candidate is not None]
    if len(attempts) < 2:
        return None
    last, prev = attempts[-1], attempts[-2]
    assert last.candidate is not None and prev.candidate is not None
    if last.candidate.sha256 is not None and last.candidate.sha256 == prev.candidate.sha256:
        return f"iteration {last.iteration} is the same code as iteration {prev.iteration}"
    return None


def code_cycle(state: SessionState, settings: StagnationSettings) -> str | None:
    """The latest candidate differs from the previous one but equals an earlier one (A, B, A)."""
    attempts = [a for a in state.attempts if a.candidate is not None]
    if len(attempts) < 3:
        return None
    last = attempts[-1]
    assert last.candidate is not None
    h = last.candidate.sha256
    if h is None or attempts[-2].candidate is None or attempts[-2].candidate.sha256 == h:
        return None
    for earlier in reversed(attempts[:-2]):
        if earlier.candidate is not None and earlier.candidate.sha256 == h:
            return f"iteration {last.iteration} is the same code as iteration {earlier.iteration}"
    return None


def category_oscillation(state: SessionState, settings: StagnationSettings) -> str | None:
    """At least N category changes within the last W attempts (N=3, W=5 by default)."""
    window = _judged(state)[-settings.oscillation_window :]
    cats = [a.verdict.category for a in window if a.verdict is not None]
    changes = sum(1 for a, b in itertools.pairwise(cats) if a != b)
    if changes >= settings.oscillation_changes:
        return f"{changes} category changes in the last {len(cats)} attempts: {' > '.join(cats)}"
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
