"""Colours, badges and short names for categories and stop reasons, shared by every pane.

One place decides how a category looks, so the timeline, the log badge, the browser and the compare view
agree. Only presentation lives here: no reading of sessions, no decisions about outcomes.
"""

from __future__ import annotations

from rich.text import Text

#: Background colour per category (docs/format.md (categories) names), readable with white or black text.
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
#: A correct attempt that missed the speedup gate: passed, but not a success.
BELOW_GATE_COLOUR = "#6b8e23"
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

STOP_COLOUR: dict[str, str] = {
    "passed": "green",
    "budget": "yellow",
    "duplicate_code": "magenta",
    "code_cycle": "magenta",
    "category_oscillation": "magenta",
    "no_progress": "magenta",
    "error": "red",
    "stopped": "yellow",
}


def colour(category: str | None, success: bool = True) -> str:
    """Background colour of a category; a correct but below-gate attempt gets its own colour."""
    if category is None:
        return PENDING_COLOUR
    if category == "passed" and not success:
        return BELOW_GATE_COLOUR
    return CATEGORY_COLOUR.get(category, PENDING_COLOUR)


def badge(category: str | None, success: bool = True, *, short: bool = False) -> Text:
    """A coloured badge, e.g. `` ILLEGAL MEMORY ACCESS ``."""
    if category is None:
        label = "…"
    else:
        label = SHORT.get(category, category) if short else category.replace("_", " ").upper()
        if category == "passed" and not success:
            label = "below gate" if short else "PASSED · BELOW GATE"
    return Text(f" {label} ", style=f"bold white on {colour(category, success)}")


def speed(value: float | None) -> str:
    """A speedup as ``0.08x``; an em dash when not measured."""
    return "—" if value is None else f"{value:.2f}x"


def short_kernel(name: str | None) -> str:
    """Kernel name without its parameter list."""
    if not name:
        return "?"
    return name.split("(", 1)[0]
