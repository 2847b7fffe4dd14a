"""The batch dashboard (`beavertui batch --tui`): progress per (model, protocol) above the run's sessions.

The batch runs in a thread worker through the same ``run_batch`` as the headless command; the
dashboard only reads its tracker and shows the very table the headless progress display prints
(batch/progress.py: done, passed, running, attempts, infrastructure failures, ETA). Below it is the
browser of the run directory, which updates as session files are written; Enter opens a session and
m the metrics of what has finished so far. Quitting while sessions run asks first; stopping lets the
sessions in flight finish, starts no new one, and leaves the rest to ``--resume``.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Label, Static

from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen

if TYPE_CHECKING:
    from beavertui.service.batch_prepare import BatchOptions, PreparedRun

Start = Callable[..., int]
"""run_batch with its arguments bound: takes ``display``, ``stop`` and ``say`` keywords."""


class BatchEnded(Message):
    def __init__(self, code: int | None, error: BaseException | None) -> None:
        super().__init__()
        self.code, self.error = code, error


class BatchDashboard(BrowserScreen, inherit_bindings=False):
    """The progress table of a running batch above the browser of its run directory.

    Its stop key comes first in the key bar (which cuts what does not fit: at 80 columns it read "x Stop
    ba"); the bindings are the browser's and Textual's screen's as inherited, only in that order."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "stop", "Stop batch"),
        *BrowserScreen.BINDINGS,
        *Screen.BINDINGS,
    ]

    def __init__(self, run_dir: Path, start: Start) -> None:
        super().__init__(run_dir)
        self.start = start
        self.stop_event = threading.Event()
        self.tracker: Any = None
        self.parallel = 1
        self.running = True
        self.code: int | None = None
        self.error: BaseException | None = None
        self.lines: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(Text("starting the batch…", style="yellow"), id="batch-progress")
        yield from super().compose()

    def on_mount(self) -> None:
        super().on_mount()
        self._run()
        self.set_interval(0.5, self.show_progress)
        # files written before the folder watcher started are picked up by a second reading
        self.set_timer(1.5, self._read_all)

    def _display(self, tracker: Any, parallel: int) -> contextlib.AbstractContextManager[Any]:
        self.tracker, self.parallel = tracker, parallel
        return contextlib.nullcontext()

    @work(thread=True, exclusive=True, group="batch")
    def _run(self) -> None:
        try:
            code = self.start(display=self._display, stop=self.stop_event, say=self.lines.append)
        except BaseException as exc:  # shown, then raised again by the command once the app is gone
            self.post_message(BatchEnded(None, exc))
            return
        self.post_message(BatchEnded(code, None))

    def on_batch_ended(self, message: BatchEnded) -> None:
        self.running = False
        self.code, self.error = message.code, message.error
        self.show_progress()
        self._read_all()  # every session as the batch left it
        if self.stop_event.is_set():
            self.app.exit(self.code if self.code is not None else 2)

    def show_progress(self) -> None:
        from beavertui.batch.progress import line, table

        box = self.query_one("#batch-progress", Static)
        if self.tracker is None:
            if self.error is not None:
                box.update(Text(f"beavertui: {self.error}", style="bold red"))
            return
        state = Text()
        if self.error is not None:
            state.append(f"stopped by an error: {self.error}", style="bold red")
        elif self.running and self.stop_event.is_set():
            n = self.tracker.totals()["running"]
            state.append(f"stopping: waiting for {n} sessions in flight to finish", style="bold yellow")
        elif self.running:
            state.append("running · x stop · q quit (asks first)", style="yellow")
        else:
            state.append("finished · q quit · m metrics · enter open a session", style="bold green")
        width = box.size.width or None
        parts: list[Any] = [table(self.tracker, self.parallel, width), Text(line(self.tracker)), state]
        parts += [Text(ln, style="dim") for ln in self.lines]
        box.update(Group(*parts))

    def action_stop(self) -> None:
        if not self.running:
            self.notify("the batch has ended")
            return
        if self.stop_event.is_set():
            self.notify("stopping already: the sessions in flight finish first")
            return
        self.app.push_screen(ConfirmStop(self), self._confirmed)

    def _confirmed(self, stop: bool | None) -> None:
        if stop:
            self.stop_event.set()
            self.show_progress()


class ConfirmStop(ModalScreen[bool]):
    """Stop the batch? Sessions in flight finish; the rest continue with --resume."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,k", "keep", "Keep running"),
        Binding("s", "stop", "Stop"),
    ]

    def __init__(self, dashboard: BatchDashboard) -> None:
        super().__init__()
        self.dashboard = dashboard

    def compose(self) -> ComposeResult:
        t = self.dashboard.tracker.totals() if self.dashboard.tracker is not None else None
        flight = f"{t['running']} sessions in flight, {t['total'] - t['done']} not finished" if t else ""
        with Vertical(id="confirm-stop"):
            yield Label(Text("The batch is still running. Stop it?", style="bold"))
            yield Label(flight)
            yield Label(
                "Stopping starts no new session and lets those in flight finish; every finished session "
                f"is kept. Continue the rest with: beavertui batch --resume {self.dashboard.root}"
            )
            with Horizontal(id="confirm-buttons"):
                yield Button("Stop (s)", id="confirm-stop-yes", variant="error")
                yield Button("Keep running (esc)", id="confirm-stop-no", variant="primary")

    @on(Button.Pressed, "#confirm-stop-yes")
    def action_stop(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-stop-no")
    def action_keep(self) -> None:
        self.dismiss(False)


class BatchApp(BeaverApp):
    """The app of `batch --tui`: quitting while the batch runs asks first, then waits for it to stop."""

    def __init__(self, run_dir: Path, start: Start) -> None:
        self.dashboard = BatchDashboard(run_dir, start)
        super().__init__(lambda: self.dashboard)

    async def action_quit(self) -> None:
        if self.dashboard.running:
            self.dashboard.action_stop()
            return
        self.exit(self.dashboard.code if self.dashboard.code is not None else 2)


def dashboard_app(options: BatchOptions, run: PreparedRun) -> BatchApp:
    """The dashboard over ``run_batch`` of these options (the app is not started)."""
    from beavertui.service.batch import run_batch

    def start(**hooks: Any) -> int:
        return run_batch(options, run, **hooks)

    return BatchApp(run.run_dir, start)


def run_dashboard(options: BatchOptions, run: PreparedRun) -> int:
    """Run the batch under the dashboard; its summary lines are printed once the screen is gone."""
    app = dashboard_app(options, run)
    code = app.run()
    for ln in app.dashboard.lines:
        print(ln, file=sys.stderr)
    if app.dashboard.error is not None:
        raise app.dashboard.error
    return code if code is not None else 2
