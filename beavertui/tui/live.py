"""Live mode: the repair loop runs in a thread worker and every event it yields is posted to the session
screen as it happens (streamed reply text included), and written to the session file.

The live screen is the replay screen plus a debugger for the loop, through engine.loopcontrol: pause and
resume, single-step (approve each iteration), edit the candidate in $EDITOR before it is built, re-run a
sanitizer tool on the current attempt while paused, stop. `beavertui live` (commands/live.py) builds the
engine objects and calls run_live; nothing here decides what the loop does.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.screen import Screen

from beavertui.engine.loop.control import LoopControl
from beavertui.engine.session.events import Event, Sanitized, SessionHeader
from beavertui.tui.session_screen import SessionEvent, SessionScreen

EDIT_ARMED = "edit armed: $EDITOR opens before the next build"


#: The loop's own keys, in the order the footer shows them first (their long form is in the help, ?).
LOOP_KEYS: list[Binding] = [
    Binding("p", "pause", "Pause"),
    Binding("space", "single_step", "Step"),
    Binding("e", "arm_edit", "Edit"),
    Binding("z", "rerun_sanitizer", "Sanitize"),
    Binding("x", "stop", "Stop"),
]


def _help_first(bindings: list[BindingType]) -> list[BindingType]:
    """The session screen's keys with its help key first."""
    helps = [b for b in bindings if isinstance(b, Binding) and b.action == "help"]
    return helps + [b for b in bindings if b not in helps]


class LiveScreen(SessionScreen, inherit_bindings=False):
    """A session screen fed by run_session in a worker, with loop controls.

    The footer lists keys in the order of the screen's bindings and cuts what does not fit; the loop's keys
    come first, then help, then the session screen's, so that an 80-column terminal shows every loop key.
    The bindings are the session screen's and Textual's screen's as inherited, only in that order."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *LOOP_KEYS,
        *_help_first(SessionScreen.BINDINGS),
        *Screen.BINDINGS,
    ]

    def __init__(
        self,
        task: Any,
        model: Any,
        toolchain: Any,
        protocol: Any,
        out_path: Path | None,
        *,
        paused: bool = False,
        run_kw: dict[str, Any] | None = None,
    ) -> None:
        from beavertui.engine.loop.run import run_session

        self.repair_task, self.toolchain, self.protocol = task, toolchain, protocol
        self.control = LoopControl(paused=paused)
        self.control.set_editor(self._editor_hook)
        self._events = run_session(task, model, toolchain, protocol, control=self.control, **(run_kw or {}))
        header = next(self._events)
        if not isinstance(header, SessionHeader):  # pragma: no cover - the loop's contract
            raise TypeError("run_session must yield the header first")
        self.writer = None
        if out_path is not None:
            from beavertui.engine.session.store import SessionRecorder

            redact = model.secrets() if hasattr(model, "secrets") else ()
            self.writer = SessionRecorder(out_path, redact=redact)
            self.writer.take(header)
        self.out_path = out_path
        self._edit_armed = False
        self._write_lock = threading.Lock()
        self.finished = threading.Event()
        super().__init__(header, ())
        self.set_reactive(SessionScreen.view, self.view.with_(following=True, status=self._status()))

    def on_mount(self) -> None:
        super().on_mount()
        self._run_loop()

    def on_unmount(self) -> None:
        super().on_unmount()
        self.control.stop()

    # ------------------------------------------------------------------ the engine worker

    @work(thread=True, exclusive=True, group="loop")
    def _run_loop(self) -> None:
        try:
            for item in self._events:
                if isinstance(item, SessionHeader):
                    continue
                self._write(item)
                self.post_message(SessionEvent(item))
        finally:
            if self.writer is not None:
                with self._write_lock:
                    self.writer.close()
            self.finished.set()
            self.post_message(SessionEvent(None))  # type: ignore[arg-type]

    def _write(self, event: Event) -> None:
        if self.writer is not None:
            with self._write_lock:
                self.writer.take(event)

    def receive(self, item: SessionHeader | Event | None) -> None:
        super().receive(item)
        if item is None or self.view.status != self._status():
            self.view = self.view.with_(status=self._status())

    def _status(self) -> str:
        if self.finished.is_set() or self.view.state.end is not None:
            return ""
        parts = []
        if self.control.stopped:
            parts.append("stopping")
        elif self.control.paused:
            parts.append("paused: space steps, p resumes")
        if self._edit_armed:
            parts.append(EDIT_ARMED)
        return " · ".join(parts)

    def _refresh_status(self) -> None:
        self.view = self.view.with_(status=self._status())

    # ------------------------------------------------------------------ controls

    def action_pause(self) -> None:
        if self.control.paused:
            self.control.resume()
        else:
            self.control.pause()
        self._refresh_status()

    def action_single_step(self) -> None:
        self.control.step()
        self._refresh_status()

    def action_stop(self) -> None:
        self.control.stop()
        self._refresh_status()

    def action_arm_edit(self) -> None:
        self._edit_armed = not self._edit_armed
        self._refresh_status()

    def _editor_hook(self, iteration: int, code: str) -> str | None:
        """Runs in the loop's thread before a build; opens $EDITOR in the UI thread when armed."""
        if not self._edit_armed:
            return None
        self._edit_armed = False
        result: str | None = self.app.call_from_thread(self._open_editor, iteration, code)
        self.app.call_from_thread(self._refresh_status)
        return result

    def _open_editor(self, iteration: int, code: str) -> str | None:
        from textual.app import SuspendNotSupported

        suffix = Path(self.view.state.header.task.solution_file).suffix or ".cu"
        with tempfile.NamedTemporaryFile("w", suffix=suffix, prefix=f"it{iteration}-", delete=False) as fh:
            fh.write(code)
            name = fh.name
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        try:
            try:
                with self.app.suspend():
                    subprocess.run([*editor, name], check=False)
            except SuspendNotSupported:
                subprocess.run([*editor, name], check=False, stdin=subprocess.DEVNULL, capture_output=True)
            new = Path(name).read_text(encoding="utf-8")
        finally:
            os.unlink(name)
        if new == code:
            self.notify("candidate unchanged")
            return None
        self.notify(f"iteration {iteration}: building your edited candidate")
        return new

    def action_rerun_sanitizer(self) -> None:
        a = self.view.attempt
        if a is None or a.candidate is None or a.candidate.code is None:
            self.notify("no candidate on this iteration", severity="warning")
            return
        if not (self.control.waiting or self.finished.is_set()):
            self.notify("pause the loop first (p): the toolchain is busy", severity="warning")
            return
        tool = self.view.sanitizer_tool or "memcheck"
        self.notify(f"running {tool} on iteration {a.iteration}…")
        self._rerun(a.iteration, a.candidate.code, tool)

    @work(thread=True, group="sanitizer")
    def _rerun(self, iteration: int, code: str, tool: str) -> None:
        from beavertui.engine.toolchain.base import AttemptOptions

        options = AttemptOptions(
            iteration=iteration,
            gate=self.protocol.gate,
            sanitize_on_failure=False,
            sanitize_tools=(tool,),  # type: ignore[arg-type]
            time_if_correct=False,
        )
        found = False
        try:
            for e in self.toolchain.attempt(self.repair_task, code, options):
                if isinstance(e, Sanitized) and e.tool == tool:
                    found = True
                    if not self.finished.is_set():
                        self._write(e)
                    self.post_message(SessionEvent(e))
        except Exception as exc:  # the toolchain's failure is reported, not raised into the UI
            self.app.call_from_thread(self.notify, f"{tool}: {exc}", severity="error")
            return
        if not found:
            self.app.call_from_thread(
                self.notify, f"{tool} produced no result for this attempt", severity="warning"
            )


def run_live(
    task: Any,
    model: Any,
    toolchain: Any,
    protocol: Any,
    out_path: str | Path | None,
    *,
    paused: bool = False,
    **run_kw: Any,
) -> int:
    """Run one repair session in the TUI; its exit status as headless (engine/errors.py), 130 when the screen
    was left before the session ended."""
    from beavertui.engine.errors import EXIT_INTERRUPTED, session_exit_status
    from beavertui.tui.app import BeaverApp

    screens: list[LiveScreen] = []

    def first() -> LiveScreen:
        screen = LiveScreen(
            task,
            model,
            toolchain,
            protocol,
            Path(out_path) if out_path else None,
            paused=paused,
            run_kw=run_kw,
        )
        screens.append(screen)
        return screen

    BeaverApp(first).run()
    if screens:
        screen = screens[0]
        screen.control.stop()
        screen.finished.wait(timeout=30)
        end = screen.view.state.end
        if end is None:
            return EXIT_INTERRUPTED
        return session_exit_status(end.success, end.stop_reason)
    return EXIT_INTERRUPTED
