"""A scrollable, focusable pane that re-renders its body whenever the screen hands it a new View.

Panes scroll with up/down/page keys only: left/right/home/end belong to the screen (stepping through
iterations), so the base bindings of Textual's scroll containers are replaced here.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from beavertui.tui.view import View


class Pane(VerticalScroll, inherit_bindings=False):
    """Base of every pane: a titled border and one Static body."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", "Scroll up", show=False),
        Binding("down", "scroll_down", "Scroll down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_home", "Top", show=False),
        Binding("ctrl+end", "scroll_end", "Bottom", show=False),
    ]
    TITLE = "pane"

    view: reactive[View | None] = reactive(None, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane")
        self.border_title = self.TITLE
        self._body = Static("", classes="pane-body")

    def compose(self):  # type: ignore[no-untyped-def]
        yield self._body

    def watch_view(self, view: View | None) -> None:
        if view is None:
            return
        self._body.update(self.render_view(view))
        subtitle = self.subtitle(view)
        self.border_subtitle = subtitle

    def render_view(self, view: View) -> RenderableType:  # pragma: no cover - overridden
        raise NotImplementedError

    def subtitle(self, view: View) -> str:
        return ""

    @property
    def text(self) -> str:
        """The pane's current content as plain text (for tests and search)."""
        content = self._body.render()
        return str(getattr(content, "plain", content))
