"""A scrollable, focusable pane that re-renders its content whenever the screen hands it a new View.

Panes draw through Textual's line API: a View is rendered to lines once (at the pane's width) and the
visible lines are served from that list, so a step never re-flows the screen layout (that is what keeps a
step well under 50 ms). Panes scroll with up/down/page keys only: left/right/home/end belong to the screen
(stepping through iterations), so the base bindings of Textual's scroll views are replaced here.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from typing import ClassVar

from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from beavertui.tui.view import View

CACHE = 32
"""Rendered views kept per pane."""
DEFER_ABOVE = 400
"""A pane's first render whose cost (``cost``) is above this is drawn after the screen's first frame."""


class Pane(ScrollView, can_focus=True, inherit_bindings=False):
    """Base of every pane: a titled border and content rendered from a View."""

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
        self._content: RenderableType = ""
        self._lines: list[Strip] = []
        self._cursor = -1
        self._cache: OrderedDict[tuple[object, ...], tuple[RenderableType, list[Strip]]] = OrderedDict()
        self._rendered = False
        """The pane has rendered a view once (heavy renders are deferred only before that)."""
        self.deferred = 0
        """Renders put off until after a frame (for tests)."""
        self._text: tuple[RenderableType, str] | None = None
        """The content ``text`` was last made from, and that text."""

    def render_key(self, view: View) -> tuple[object, ...]:
        """What the content depends on; equal keys render equal content (so steps back are cached)."""
        return (view.state.events, view.cursor)

    def watch_view(self, view: View | None) -> None:
        if view is None:
            return
        self.border_subtitle = self.subtitle(view)
        if view.cursor != self._cursor:
            self._cursor = view.cursor
            self.scroll_to(0, 0, animate=False, immediate=True)
        self._update()

    def on_resize(self) -> None:
        self._update()

    def _update(self) -> None:
        view = self.view
        width = self.scrollable_content_region.width
        if view is None or width <= 0:
            return
        key = (*self.render_key(view), width)
        hit = self._cache.get(key)
        if hit is None and not self._rendered and self.cost(view) > DEFER_ABOVE:
            # A lazy first render: the screen paints with a placeholder here, then this pane is drawn.
            self._rendered = True
            self.deferred += 1
            hit = (Text(f"rendering iteration {view.cursor}…", style="dim italic"), [])
            self.call_after_refresh(self._update)
            self._content, self._lines = hit
            self.refresh()
            return
        self._rendered = True
        if hit is None:
            content = self.render_view(view)
            console = self.app.console
            lines = console.render_lines(content, console.options.update_width(width), pad=False)
            hit = (content, [Strip(Segment.simplify(line)) for line in lines])
            self._cache[key] = hit
            if len(self._cache) > CACHE:
                self._cache.popitem(last=False)
        self._content, self._lines = hit
        size = Size(width, len(self._lines))
        if size != self.virtual_size:
            # The content's height changed: update the scroll range without a screen-wide re-layout
            # (assigning virtual_size would re-flow every widget; the pane's own box does not change).
            self.set_reactive(Widget.virtual_size, size)
            self._refresh_scrollbars()
            self._scroll_update(size)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.scrollable_content_region.width
        style = self.rich_style
        if i >= len(self._lines):
            return Strip.blank(width, style)
        return self._lines[i].crop_extend(scroll_x, scroll_x + width, style).apply_style(style)

    def reveal(self, query: str) -> int | None:
        """Scroll to the first line shown that contains ``query`` (case-insensitive), two lines below the
        top; the line's index, or None where no line shows it (the pane stays where it is)."""
        q = query.lower()
        hit = next((i for i, line in enumerate(self._lines) if q in line.text.lower()), None)
        if hit is not None:
            self.scroll_to(0, max(0, hit - 2), animate=False, immediate=True)
        return hit

    def render_view(self, view: View) -> RenderableType:  # pragma: no cover - overridden
        raise NotImplementedError

    def subtitle(self, view: View) -> str:
        return ""

    def cost(self, view: View) -> int:
        """About how many lines rendering ``view`` takes (a first render above DEFER_ABOVE is deferred)."""
        return 0

    @property
    def text(self) -> str:
        """The pane's current content as plain text, unwrapped (for tests and copying). Made once per
        content: a capped pane holds up to hundreds of kilobytes of highlighted text."""
        content = self._content
        if self._text is None or self._text[0] is not content:
            console = Console(width=400, file=io.StringIO(), color_system=None, record=True)
            console.print(_unstyled(content))
            text = "\n".join(line.rstrip() for line in console.export_text().splitlines())
            self._text = (content, text)
        return self._text[1]


def _unstyled(content: RenderableType) -> RenderableType:
    """The same content without its styles (text and groups of text; other renderables as they are): the
    plain text of a highlighted diff is the same, and rendering tens of thousands of spans is the cost."""
    if isinstance(content, Text):
        return Text(
            content.plain,
            justify=content.justify,
            overflow=content.overflow,
            no_wrap=content.no_wrap,
            end=content.end,
            tab_size=content.tab_size,
        )
    if isinstance(content, Group):
        return Group(*(_unstyled(part) for part in content.renderables), fit=content.fit)
    return content
