"""The colours and short names of the eight categories, one palette for the terminal screens and the HTML pages."""

from __future__ import annotations

#: Background colour per category (the categories of docs/format.md), readable with white or black text.
CATEGORY_COLOUR: dict[str, str] = {
    "environment_dependency": "#8f5fbf",
    "integration": "#c76b29",
    "buildability": "#b8962e",
    "out_of_memory": "#a0527a",
    "illegal_memory_access": "#c0392b",
    "timeout": "#2e6fb8",
    "functional_correctness": "#d4762c",
    "passed": "#2e8b57",
}
#: A correct attempt that missed the speedup gate: correct, but a failure (never a shade of the pass green).
BELOW_GATE_COLOUR = "#9a5b00"
PENDING_COLOUR = "#444444"

SHORT: dict[str, str] = {
    "environment_dependency": "env",
    "integration": "integ",
    "buildability": "build",
    "out_of_memory": "oom",
    "illegal_memory_access": "illegal",
    "timeout": "timeout",
    "functional_correctness": "wrong",
    "passed": "passed",
}

STAGES = ("request", "reply", "candidate", "build", "run", "sanitize", "timing", "verdict")
"""The stages of an attempt, in the order they run."""


def colour(category: str | None, success: bool = True, *, pending: bool = False) -> str:
    """Background colour of a category; a correct but below-gate attempt gets its own colour, one whose
    timing is pending (``pending``: the batch's timing lane times it after the loop) the colour of a stage
    under way: it is not known yet whether it passes the gate."""
    if category is None or pending:
        return PENDING_COLOUR
    if category == "passed" and not success:
        return BELOW_GATE_COLOUR
    return CATEGORY_COLOUR.get(category, PENDING_COLOUR)


def speed(value: float | None) -> str:
    """A speedup as ``0.08x``; an em dash when not measured (the terminal screens and the HTML pages alike)."""
    return "—" if value is None else f"{value:.2f}x"
