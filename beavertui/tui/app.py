"""The Textual application: one app class that opens on a browser, a session, a comparison or live.

What opens first is decided by the command that starts the app (commands/*.py); the app only hosts
screens, loads the stylesheet and lists every screen action in the command palette.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen


class BeaverApp(App[int]):
    """Hosts the first screen given to it; more screens are pushed from there (Enter, Escape)."""

    CSS_PATH = "beavertui.tcss"
    TITLE = "beavertui"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit")]

    def __init__(self, first: Callable[[], Screen[None]]) -> None:
        super().__init__()
        self._first = first

    def on_mount(self) -> None:
        self.push_screen(self._first())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:  # type: ignore[type-arg]
        yield from super().get_system_commands(screen)
        for binding in getattr(screen, "BINDINGS", []):
            if not isinstance(binding, Binding) or not binding.description:
                continue
            key = binding.key.split(",")[0]
            yield SystemCommand(binding.description, f"key {key}", partial(screen.run_action, binding.action))
