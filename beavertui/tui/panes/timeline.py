"""The iteration timeline: one cell per iteration of the budget, coloured by category, with a cursor.

Clicking a cell moves the cursor there (the screen receives a message; the timeline owns no state).
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from beavertui.tui.style import PENDING_COLOUR, SHORT, colour, speed
from beavertui.tui.view import View

CELL = 15
COMPACT = 4
"""The narrowest cell: three characters of number and category, and a space."""


class Timeline(Widget):
    """A row of iteration cells; the one under the cursor is framed."""

    view: reactive[View | None] = reactive(None, always_update=True)

    class Selected(Message):
        """The user clicked an iteration."""

        def __init__(self, iteration: int) -> None:
            super().__init__()
            self.iteration = iteration

    def render(self) -> Text:
        view = self.view
        if view is None:
            return Text("")
        top, mid, bottom = Text(), Text(), Text()
        last = max(view.budget, view.state.iteration)
        width = max(self.size.width, 1)
        # Full cells where the budget fits; else the widest cells that fit, each still saying its number
        # and, below it, its category in short (the colour alone is no answer on a monochrome terminal).
        cell = CELL if last * CELL <= width else max(COMPACT, min(CELL - 1, width // last))
        self._cell = cell
        for it in range(1, last + 1):
            a = view.state.attempt(it)
            v = a.verdict if a else None
            here = it == view.cursor
            if v is not None:
                label = f"{it} {SHORT.get(v.category, v.category)}"
                if v.timing_pending:  # correct, not timed yet: neither passed nor below the gate
                    label = f"{it} pending"
                elif v.category == "passed" and not v.success:
                    label = f"{it} below gate"
                bg = colour(v.category, v.success, pending=v.timing_pending)
                sub = speed(v.speedup) if v.speedup is not None else ""
            elif a is not None:
                label, bg, sub = f"{it} {a.stage}…", PENDING_COLOUR, ""
            else:
                label, bg, sub = f"{it} ·", "#222222", ""
            edge = "bold yellow" if here else "#555555"
            top.append(("▄" if here else " ") * (cell - 1) + " ", style=edge)
            if cell < CELL:  # the number whole, centred; the category in short under it
                short = label.split(" ", 1)[1] if " " in label else ""
                mid.append(f"{it:^{cell - 1}}", style=f"bold white on {bg}")
                mid.append(" ")
                bottom.append(f"{short:^{cell - 1}.{cell - 1}} ", style="bold yellow" if here else "dim")
                continue
            mid.append(f" {label:<{cell - 3}.{cell - 3}} ", style=f"bold white on {bg}")
            mid.append(" ")
            sub_text = f"{'▲ ' if here else ''}{sub}"
            bottom.append(f"{sub_text:^{cell - 1}.{cell - 1}} ", style="bold yellow" if here else "dim")
        return Text("\n").join([top, mid, bottom])

    def on_click(self, event: events.Click) -> None:
        iteration = event.x // getattr(self, "_cell", CELL) + 1
        if self.view is not None and self.view.state.attempt(iteration) is not None:
            self.post_message(self.Selected(iteration))
