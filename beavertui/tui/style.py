"""Colours, badges and short names for categories and stop reasons, shared by every pane.

One place decides how a category looks, so the timeline, the log badge, the browser and the compare view
agree. Only presentation lives here: no reading of sessions, no decisions about outcomes.
"""

from __future__ import annotations

from rich.text import Text

from beavertui.reports.palette import BELOW_GATE_COLOUR, CATEGORY_COLOUR, PENDING_COLOUR, SHORT, colour, speed

__all__ = [
    "BELOW_GATE_COLOUR",
    "CATEGORY_COLOUR",
    "PENDING_COLOUR",
    "SHORT",
    "STOP_COLOUR",
    "badge",
    "colour",
    "short_kernel",
    "speed",
]

STOP_COLOUR: dict[str, str] = {
    "passed": "green",
    "budget": "yellow",
    "duplicate_code": "magenta",
    "code_cycle": "magenta",
    "category_oscillation": "magenta",
    "no_progress": "magenta",
    "error": "red",
    "stopped": "yellow",
    "unusable": "dim",
    "failed gate": "bold red",
    "timing pending": "yellow",
}


def badge(category: str | None, success: bool = True, *, short: bool = False, pending: bool = False) -> Text:
    """A coloured badge, e.g. `` ILLEGAL MEMORY ACCESS ``; `` TIMING PENDING `` for a correct attempt whose
    timing is pending (``pending``), never "below gate" before it is timed."""
    if pending:
        label = "timing pending" if short else "TIMING PENDING"
    elif category is None:
        label = "…"
    else:
        label = SHORT.get(category, category) if short else category.replace("_", " ").upper()
        if category == "passed" and not success:
            label = "below gate" if short else "FAILED: BELOW GATE"
    return Text(f" {label[:80]} ", style=f"bold white on {colour(category, success, pending=pending)}")


def short_kernel(name: str | None) -> str:
    """Kernel name without its parameter list."""
    if not name:
        return "?"
    return name.split("(", 1)[0]
