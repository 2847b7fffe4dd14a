"""The compare screen: two sessions of one task side by side (two models or two protocols), iterations
aligned, categories and speedups next to each other, and each side's diff at the cursor."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static

from beavertui.engine.session.describe import ended_text, stop_text
from beavertui.engine.session.state import SessionState
from beavertui.tui.footer import Footer
from beavertui.tui.help import HelpScreen
from beavertui.tui.panes import DiffPane
from beavertui.tui.style import STOP_COLOUR, badge, speed
from beavertui.tui.view import DIFF_MODES, View


def side_label(s: SessionState) -> Text:
    h = s.header
    t = Text()
    t.append(f"{h.model.name}", style="bold")
    t.append(f" · {h.protocol.short()}", style="dim")
    if s.end is not None:
        t.append(
            f" · {ended_text(s.end, h.protocol.gate)}",
            style=STOP_COLOUR.get(stop_text(s.end.stop_reason, s.end.success, s.end.timing_pending), ""),
        )
    return t


def aligned_table(a: SessionState, b: SessionState, cursor: int, branch_step: int | None = None) -> Table:
    """One row per iteration: each side's category, speedup and code hash, and whether the code agrees.

    With ``branch_step`` (B is a branch of A), iterations up to it are B's frozen copy of A's prefix.
    """
    table = Table(expand=True, box=None, header_style="bold", pad_edge=False)
    table.add_column("it", justify="right", width=3)
    for side in ("A", "B"):
        table.add_column(f"{side} category", ratio=2, no_wrap=True)
        table.add_column(f"{side} speedup", justify="right", ratio=1)
        table.add_column(f"{side} code", ratio=1)
    table.add_column("same code", ratio=1)
    last = max(a.header.protocol.budget, b.header.protocol.budget, a.iteration, b.iteration)
    for it in range(1, last + 1):
        row: list[Text | str] = [Text(str(it), style="bold yellow" if it == cursor else "")]
        hashes: list[str | None] = []
        for s in (a, b):
            att = s.attempt(it)
            v = att.verdict if att else None
            if att is None:
                row += [Text("—", style="dim"), "", ""]
                hashes.append(None)
                continue
            row.append(
                badge(v.category, v.success, pending=v.timing_pending)
                if v
                else Text(f"{att.stage}…", style="dim")
            )
            row.append(Text(speed(v.speedup if v else None), style="green" if v and v.success else ""))
            h = att.candidate.sha256 if att.candidate else None
            row.append(Text((h or "no code")[:8], style="dim"))
            hashes.append(h)
        same = hashes[0] is not None and hashes[0] == hashes[1]
        if branch_step is not None and it <= branch_step:
            row.append(Text("frozen", style="cyan"))
        else:
            row.append(Text("identical" if same else "", style="magenta"))
        table.add_row(*row, style="on #333333" if it == cursor else "")
    return table


class CompareScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "Back"),
        Binding("right", "step(1)", "Forward"),
        Binding("home", "first", "First"),
        Binding("end", "last", "Last"),
        Binding("h", "step(-1)", "Back", show=False),
        Binding("l", "step(1)", "Forward", show=False),
        Binding("d", "cycle_diff", "Diff mode"),
        Binding("question_mark,f1", "help", "Help"),
        Binding("escape", "back", "Back", show=False),
    ]

    cursor: reactive[int] = reactive(1, init=False)
    diff_mode: reactive[str] = reactive("previous", init=False)

    def __init__(self, a: SessionState, b: SessionState, branch_step: int | None = None) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.branch_step = branch_step
        """B branches from A after this step (None: two independent sessions)."""

    @property
    def last(self) -> int:
        return max(self.a.iteration, self.b.iteration, 1)

    def compose(self) -> ComposeResult:
        yield Static(id="compare-header")
        yield Static(id="compare-table")
        with Horizontal(id="compare-diffs"):
            yield DiffPane(id="diff-a").add_class("compare-diff")
            yield DiffPane(id="diff-b").add_class("compare-diff")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#diff-a").focus()
        self._refresh_all()

    def _refresh_all(self) -> None:
        head = Text()
        head.append(f" {self.a.header.task.id} ", style="bold reverse")
        head.append(f"  iteration {self.cursor}\n")
        head.append(" A ", style="bold reverse")
        head.append(" ")
        head.append_text(side_label(self.a))
        head.append("\n")
        head.append(" B ", style="bold reverse")
        head.append(" ")
        head.append_text(side_label(self.b))
        if self.branch_step is not None:
            head.append(f"  branch of A after step {self.branch_step}", style="bold cyan")
        self.query_one("#compare-header", Static).update(head)
        self.query_one("#compare-table", Static).update(
            aligned_table(self.a, self.b, self.cursor, self.branch_step)
        )
        for pane_id, state, side in (("#diff-a", self.a, "A"), ("#diff-b", self.b, "B")):
            pane = self.query_one(pane_id, DiffPane)
            pane.view = View(state=state, cursor=self.cursor, diff_mode=self.diff_mode)
            pane.border_title = f"{side} · {state.header.model.name} · {pane.border_title}"

    def watch_cursor(self) -> None:
        self._refresh_all()

    def watch_diff_mode(self) -> None:
        self._refresh_all()

    def action_step(self, delta: int) -> None:
        self.cursor = max(1, min(self.last, self.cursor + delta))

    def action_first(self) -> None:
        self.cursor = 1

    def action_last(self) -> None:
        self.cursor = self.last

    def action_cycle_diff(self) -> None:
        self.diff_mode = DIFF_MODES[(DIFF_MODES.index(self.diff_mode) + 1) % len(DIFF_MODES)]

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
