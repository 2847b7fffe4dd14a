"""The session screen: one session (replayed, followed, or live) as a header, a timeline and five panes.

The screen owns the folded state and the cursor, and hands a View down to every pane (attributes down).
Follow mode reads appended events in a thread worker that posts them back as messages (messages up);
the screen folds each with the engine's one reducer. Live mode (live.py) extends this screen.

A large file is shown before it is read whole: the screen folds at most FIRST_EVENTS events (from at most
FIRST_BYTES of the file) before its first frame, then a thread worker reads and folds the rest, posting
the state as it goes; the header says how far reading is. What is finally shown is the fold of every event
the session reader accepts, the same as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Input

from beavertui.engine.session.events import Event, SessionEnd, SessionHeader
from beavertui.engine.session.state import SessionState, apply, fold, fold_more
from beavertui.engine.session.store import SessionReader
from beavertui.tui.footer import Footer
from beavertui.tui.help import HelpScreen
from beavertui.tui.panes import (
    AnalysisPane,
    DiffPane,
    HeaderBar,
    LogPane,
    Pane,
    SanitizerPane,
    SpeedupPane,
    StagnationPane,
    Timeline,
)
from beavertui.tui.search import find
from beavertui.tui.view import PLAN_MODE, SANITIZER_TOOLS, View, diff_modes


class SessionEvent(Message):
    """An event (or the header) arrived from a worker."""

    def __init__(self, item: SessionHeader | Event) -> None:
        super().__init__()
        self.item = item


FIRST_EVENTS = 1000
"""Events folded before the first frame; the rest are folded by a worker after it."""
FIRST_BYTES = 1 << 20
"""Bytes of the file read before the first frame (a longer line is left to the worker)."""
LOAD_CHUNK = 2000
"""Events the worker reads and folds between two looks at whether to post the state."""
POST_EVERY_S = 0.25
"""How often the worker posts the state folded so far while reading (the last one is always posted)."""
START_AFTER_S = 0.1
"""The worker starts this long after the first whole frame was composed (for the output thread to write it)."""


class _Events:
    """Already parsed events, read in steps like a SessionReader."""

    def __init__(self, events: Sequence[Event], problem: str | None) -> None:
        self._events, self.problem = events, problem
        self.offset = 0
        self.size = len(events)
        self.done = not events

    def read(self, max_events: int | None = None, max_bytes: int | None = None) -> list[Event]:
        end = self.size if max_events is None else min(self.size, self.offset + max_events)
        out = list(self._events[self.offset : end])
        self.offset = end
        self.done = end >= self.size
        return out


def _reading(source: SessionReader | _Events) -> str:
    if isinstance(source, _Events):
        return f"folding {source.offset:,} of {source.size:,} events"
    share = source.offset / source.size if source.size else 1.0
    return f"reading {share:.0%} of {source.size / (1 << 20):,.1f} MiB · {source.count:,} events"


def follow_after_load(path: Path, ended: bool, problem: str | None) -> tuple[Path | None, str | None]:
    """Whether a session opened from the browser is followed (it has no end line and no damage, or its
    last line is being written now), and the problem left to show."""
    follow = None if ended or problem else path
    if problem and problem.startswith("truncated last line") and time.time() - path.stat().st_mtime < 60:
        follow, problem = path, None
    return follow, problem


class Loaded(Message):
    """The load worker folded more of the file (``done``: all of it; ``problem``: where it stopped)."""

    def __init__(self, state: SessionState, reading: str, done: bool, problem: str | None, ended: bool):
        super().__init__()
        self.state, self.reading, self.done, self.problem, self.ended = state, reading, done, problem, ended


class FollowProblem(Message):
    """Following stopped on a damaged line."""

    def __init__(self, problem: str) -> None:
        super().__init__()
        self.problem = problem


class SessionScreen(Screen[None]):
    """Replay of a session, optionally following a file that is still being written."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Help first: the key bar cuts what does not fit, and at 80 columns it ended at "s Sanitizer".
        Binding("question_mark,f1", "help", "Help"),
        Binding("left", "step(-1)", "Back"),
        Binding("right", "step(1)", "Forward"),
        Binding("home", "first", "First"),
        Binding("end", "last", "Last"),
        Binding("h", "step(-1)", "Back", show=False),
        Binding("l", "step(1)", "Forward", show=False),
        Binding("g", "first", "First", show=False),
        Binding("G", "last", "Last", show=False),
        Binding("d", "cycle_diff", "Diff mode"),
        Binding("r", "raw_log", "Raw log"),
        Binding("s", "cycle_tool", "Sanitizer tool"),
        Binding("slash", "search", "Search"),
        Binding("n", "search_next", "Next match", show=False),
        Binding("N", "search_prev", "Previous match", show=False),
        Binding("escape", "back", "Back to list", show=False),
        Binding("a", "toggle_analysis", "Analysis pane", show=False),
        Binding("c", "compare_parent", "Compare with parent", show=False),
        Binding("b", "branch", "Branch from here", show=False),
        Binding("A", "attribution", "Attribution", show=False),
    ]

    view: reactive[View] = reactive(None, always_update=True, init=False)  # type: ignore[arg-type]

    def __init__(
        self,
        header: SessionHeader,
        events: Sequence[Event] = (),
        *,
        problem: str | None = None,
        follow: Path | None = None,
        name: str | None = None,
        path: Path | None = None,
        reader: SessionReader | None = None,
        follow_unfinished: bool = False,
    ) -> None:
        """``events`` (and the ``problem`` of the file they came from), or a ``reader`` whose header is
        ``header``, read in steps. ``follow``: keep reading what is appended to that file once it is
        read; ``follow_unfinished``: follow ``path`` if it turns out to be unfinished (the browser)."""
        super().__init__(name=name)
        source: SessionReader | _Events = reader if reader is not None else _Events(events, problem)
        first = source.read(FIRST_EVENTS, FIRST_BYTES)
        state = fold(header, first)
        self._source: SessionReader | _Events | None = None if source.done else source
        self._ended = bool(first) and isinstance(first[-1], SessionEnd)
        self._follow_path = follow
        self._follow_unfinished = follow_unfinished
        self.path = path or follow
        """The session file (None when unknown): branches and attributions are found from it."""
        self._skip = 1 + state.events
        self._stop = threading.Event()
        self._pinned = False
        """The user stepped away from the newest iteration: new events do not move the cursor."""
        view = View(state=state, cursor=state.iteration, problem=problem if reader is None else None)
        if source.done:
            view = self._settle(view, source.problem, self._ended)
        else:
            view = view.with_(reading=_reading(source))
        self.set_reactive(SessionScreen.view, view)

    def _settle(self, view: View, problem: str | None, ended: bool) -> View:
        """The view once every event is folded: the file's problem, and whether it is followed."""
        if self._follow_unfinished and self.path is not None:
            self._follow_path, problem = follow_after_load(self.path, ended, problem)
        elif self._follow_path is not None and problem is not None and problem.startswith("truncated last"):
            problem = None  # the writer is mid-line; follow mode picks it up when the newline arrives
        self._skip = 1 + view.state.events
        return view.with_(problem=problem, following=self._follow_path is not None, reading="")

    @property
    def state(self) -> SessionState:
        return self.view.state

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header").data_bind(SessionScreen.view)
        yield Timeline(id="timeline").data_bind(SessionScreen.view)
        with Horizontal(id="main"):
            yield DiffPane(id="diff").data_bind(SessionScreen.view)
            with Vertical(id="right"):
                yield LogPane(id="log").data_bind(SessionScreen.view)
                yield SanitizerPane(id="sanitizer").data_bind(SessionScreen.view)
            yield AnalysisPane(id="analysis").data_bind(SessionScreen.view)
        with Horizontal(id="bottom"):
            yield SpeedupPane(id="speedup").data_bind(SessionScreen.view)
            yield StagnationPane(id="stagnation").data_bind(SessionScreen.view)
        yield Input(
            placeholder="search code, logs, replies, categories (enter: find, esc: close)", id="search"
        )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#search", Input).display = False
        self.query_one("#analysis").display = False
        self.query_one("#diff").focus()
        # The app's first frame is composed before it starts writing to the terminal, and the next ones
        # carry only what changed since: draw the header and timeline again so that they are in them.
        self.call_after_refresh(self._redraw_top)
        if self._follow_path is not None and self._source is None:
            self._follow_worker(self._follow_path)

    def on_unmount(self) -> None:
        self._stop.set()

    def _redraw_top(self) -> None:
        self.query_one(HeaderBar).refresh()
        self.query_one(Timeline).refresh()
        if self._source is not None:  # the rest of a large file, once the frame with every pane is out
            source, state = self._source, self.state
            self.call_after_refresh(lambda: self._load_worker(source, state))

    # ------------------------------------------------------------------ loading a large file

    @work(thread=True, exclusive=True, group="load")
    def _load_worker(self, source: SessionReader | _Events, state: SessionState) -> None:
        # Let the first frames reach the terminal first: parsing one huge line holds the interpreter
        # lock for its whole length, which would keep the app's output thread from writing them.
        if self._stop.wait(START_AFTER_S):
            return
        ended = self._ended
        posted = time.monotonic()
        while not source.done:
            if self._stop.is_set():
                return
            chunk = source.read(LOAD_CHUNK)
            if chunk:
                state = fold_more(state, chunk)
                ended = isinstance(chunk[-1], SessionEnd)
            if not source.done and time.monotonic() - posted >= POST_EVERY_S:
                self.post_message(Loaded(state, _reading(source), False, None, ended))
                posted = time.monotonic()
        self.post_message(Loaded(state, "", True, source.problem, ended))

    def on_loaded(self, message: Loaded) -> None:
        view = self.view
        cursor = view.cursor if self._pinned else message.state.iteration
        view = view.with_(state=message.state, cursor=cursor, reading=message.reading)
        if message.done:
            self._source = None
            view = self._settle(view, message.problem, message.ended)
        self.view = view
        if message.done and self._follow_path is not None:
            self._follow_worker(self._follow_path)

    # ------------------------------------------------------------------ following

    @work(thread=True, exclusive=True, group="follow")
    def _follow_worker(self, path: Path) -> None:
        from beavertui.engine.errors import SessionFileError
        from beavertui.engine.session.store import follow

        skip = self._skip
        try:
            for item in follow(path, stop=self._stop, poll_ms=200):
                if skip > 0:
                    skip -= 1
                    continue
                if self._stop.is_set():
                    return
                self.post_message(SessionEvent(item))
        except SessionFileError as exc:
            self.post_message(FollowProblem(str(exc)))
        self.post_message(SessionEvent(None))  # type: ignore[arg-type]

    def on_session_event(self, message: SessionEvent) -> None:
        self.receive(message.item)

    def on_follow_problem(self, message: FollowProblem) -> None:
        self.view = self.view.with_(problem=message.problem, following=False)

    def receive(self, item: SessionHeader | Event | None) -> None:
        """Fold one arriving event (None: the stream ended)."""
        view = self.view
        if item is None:
            self.view = view.with_(following=False)
            return
        if isinstance(item, SessionHeader):
            self.view = view.with_(state=fold(item, ()), cursor=0)
            return
        at_newest = not self._pinned
        state = apply(view.state, item)
        cursor = state.iteration if at_newest else view.cursor
        following = view.following and state.end is None
        self.view = view.with_(state=state, cursor=cursor, following=following)

    # ------------------------------------------------------------------ actions

    def _move(self, iteration: int) -> None:
        its = [a.iteration for a in self.state.attempts]
        if not its:
            return
        iteration = max(its[0], min(its[-1], iteration))
        self._pinned = iteration != its[-1]
        if iteration != self.view.cursor:
            self.view = self.view.with_(cursor=iteration)

    def action_step(self, delta: int) -> None:
        its = [a.iteration for a in self.state.attempts]
        if not its:
            return
        cur = self.view.cursor
        if delta > 0:
            later = [i for i in its if i > cur]
            self._move(later[0] if later else its[-1])
        else:
            earlier = [i for i in its if i < cur]
            self._move(earlier[-1] if earlier else its[0])

    def action_first(self) -> None:
        if self.state.attempts:
            self._move(self.state.attempts[0].iteration)

    def action_last(self) -> None:
        if self.state.attempts:
            self._move(self.state.attempts[-1].iteration)

    def action_cycle_diff(self) -> None:
        modes = diff_modes(self.view.state)
        i = modes.index(self.view.diff_mode) if self.view.diff_mode in modes else -1
        self.view = self.view.with_(diff_mode=modes[(i + 1) % len(modes)])

    def action_raw_log(self) -> None:
        self.view = self.view.with_(raw_log=not self.view.raw_log)

    def action_cycle_tool(self) -> None:
        i = SANITIZER_TOOLS.index(self.view.sanitizer_tool)
        self.view = self.view.with_(sanitizer_tool=SANITIZER_TOOLS[(i + 1) % len(SANITIZER_TOOLS)])

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.value = self.view.search
        box.focus()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_back(self) -> None:
        box = self.query_one("#search", Input)
        if box.display:
            box.display = False
            self.query_one("#diff").focus()
            return
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_toggle_analysis(self) -> None:
        """Show the analysis pane in place of the log and sanitizer column (and back)."""
        pane = self.query_one("#analysis")
        pane.display = not pane.display
        self.query_one("#right").display = not pane.display
        if pane.display:
            pane.focus()

    def _parent_path(self) -> Path | None:
        parent = self.state.header.parent
        if parent is None:
            return None
        candidates = [Path(parent)]
        if self.path is not None and not Path(parent).is_absolute():
            candidates.append(self.path.parent / Path(parent).name)
        return next((c for c in candidates if c.is_file()), None)

    def action_compare_parent(self) -> None:
        """A branch next to its parent on the compare screen, the frozen prefix marked."""
        header = self.state.header
        if header.parent is None:
            self.notify("this session is not a branch (it has no parent)", severity="warning", timeout=3)
            return
        path = self._parent_path()
        if path is None:
            self.notify(f"parent {header.parent} is not here", severity="error", timeout=5)
            return
        self.show_branch(path, self.state, header.branch_step)

    def show_branch(self, parent: Path, branch: SessionState, step: int | None) -> None:
        from beavertui.engine.session.store import read_session
        from beavertui.tui.compare import CompareScreen

        p_header, p_events, problem = read_session(parent)
        if p_header is None:
            self.notify(f"{parent}: {problem}", severity="error", timeout=5)
            return
        compare = CompareScreen(fold(p_header, p_events), branch, branch_step=step)
        if step is not None:
            compare.set_reactive(CompareScreen.cursor, min(step + 1, max(branch.iteration, 1)))
        self.app.push_screen(compare)

    def action_branch(self) -> None:
        """Start a branch from the step at the cursor (it must be a judged, failed attempt)."""
        from beavertui.tui.analysis import BranchScreen

        if self.path is None:
            self.notify("the session file is not known here; use beavertui branch", severity="warning")
            return
        attempt = self.view.attempt
        if attempt is None or attempt.verdict is None or attempt.verdict.correct:
            self.notify("branch from a judged, failed attempt", severity="warning", timeout=3)
            return
        parent, step = self.path, attempt.iteration

        def opened(result: Path | None) -> None:
            if result is None:
                return
            from beavertui.engine.session.store import read_session

            header, events, _problem = read_session(result)
            if header is not None:
                self.notify(f"branch written to {result}", timeout=5)
                self.show_branch(parent, fold(header, events), step)

        self.app.push_screen(BranchScreen(parent, self.state.header, step, self.branch_dir), opened)

    branch_dir: Path | None = None
    """Where branches started here are written (None: sessions/branches under the working folder)."""

    def action_attribution(self) -> None:
        """Saved attribution runs from frozen steps of this session (attribution-<session>-at<STEP>.json)."""
        from beavertui.engine.errors import BeaverError
        from beavertui.tui.analysis import AttributionScreen, attribution_files

        files = attribution_files(self.path) if self.path is not None else []
        if not files:
            self.notify("no saved attribution of this session (run beavertui attribute)", severity="warning")
            return
        try:
            self.app.push_screen(AttributionScreen(files))
        except BeaverError as exc:
            self.notify(str(exc), severity="error", timeout=5)

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.input.display = False
        self.query_one("#diff").focus()
        self.view = self.view.with_(search=event.value)
        self._search(backwards=False)

    def action_search_next(self) -> None:
        self._search(backwards=False)

    def action_search_prev(self) -> None:
        self._search(backwards=True)

    def _search(self, *, backwards: bool) -> None:
        query = self.view.search
        if not query:  # n/N before any search: say what they need rather than do nothing
            self.notify("no search yet: press / and type what to find, then n / N", timeout=3)
            return
        hit = find(self.state, query, self.view.cursor, backwards=backwards)
        if hit is None:
            self.notify(f"'{query}' is in no iteration", severity="warning", timeout=3)
            return
        iteration, place = hit
        self._move(iteration)
        if place == "code" and self.view.diff_mode != "file":
            self.view = self.view.with_(diff_mode="file")
        elif place in ("plan", "summary") and self.view.diff_mode != PLAN_MODE:
            self.view = self.view.with_(diff_mode=PLAN_MODE)
        self.notify(f"'{query}' in iteration {iteration} ({place})", timeout=3)
        # Show the line that matched, not the top of the file (a match on line 90 was off screen).
        pane = "#diff" if place in ("code", "plan", "summary") else "#log" if place != "reply" else None
        if pane is not None:
            self.call_after_refresh(self._reveal, pane, query)

    def _reveal(self, pane: str, query: str) -> None:
        self.query_one(pane, Pane).reveal(query)

    def on_timeline_selected(self, message: Timeline.Selected) -> None:
        self._move(message.iteration)
