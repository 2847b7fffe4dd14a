"""LoopControl: how a front end steers a running repair loop from another thread.

Pause, single-step, stop, and edit-before-build (the live debugger). The loop calls ``wait_turn`` before
each request and ``edit`` before each build; the TUI calls the other methods from its own thread. Every
method is thread-safe. This module must not know about widgets or events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

#: Called with (iteration, extracted code); returns the code to build, or None to keep it.
Editor = Callable[[int, str], "str | None"]


class LoopControl:
    """Thread-safe pause / step / stop / edit switches for one session."""

    def __init__(self, *, paused: bool = False) -> None:
        self._cond = threading.Condition()
        self._paused = paused
        self._steps = 0
        self._stopped = False
        self._editor: Editor | None = None
        self.waiting = False
        """True while the loop is blocked in wait_turn (for a 'paused' indicator)."""

    def pause(self) -> None:
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def step(self, n: int = 1) -> None:
        """Let ``n`` more attempts start, then hold again (pauses if running)."""
        with self._cond:
            self._paused = True
            self._steps += n
            self._cond.notify_all()

    def stop(self) -> None:
        """End the session as 'stopped' at the next checkpoint (before a request or a build)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    @property
    def stopped(self) -> bool:
        with self._cond:
            return self._stopped

    @property
    def paused(self) -> bool:
        with self._cond:
            return self._paused

    def set_editor(self, editor: Editor | None) -> None:
        """Install (or remove) an edit-before-build hook; it runs in the loop's thread and may block."""
        with self._cond:
            self._editor = editor

    def edit(self, iteration: int, code: str) -> str | None:
        with self._cond:
            editor = self._editor
        return editor(iteration, code) if editor is not None else None

    def wait_turn(self, timeout_s: float | None = None) -> bool:
        """Block while paused without step credit; False when the session should stop."""
        with self._cond:
            self.waiting = True
            try:
                while not self._stopped and self._paused and self._steps == 0:
                    if not self._cond.wait(timeout_s):
                        return not self._stopped
                if self._stopped:
                    return False
                if self._paused and self._steps > 0:
                    self._steps -= 1
                return True
            finally:
                self.waiting = False
