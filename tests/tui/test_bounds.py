"""What the session screen loads and renders is bounded, whatever the file the session reader accepts.

Checked by structure, not by the clock: how many events and bytes are folded before the first frame,
that the rest is folded afterwards to exactly the state the plain reader gives, that the lazy reader
reads every file as reading it whole did, that folding a sequence equals applying its events one at a
time, and that no pane is handed more than its caps however large the session's texts and lists are.
bench/tui_first_paint_bench.py measures the resulting times in a real terminal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beavertui.engine.session import events as ev
from beavertui.engine.session.state import apply, fold, fold_more, initial
from beavertui.engine.session.store import (
    SessionReader,
    _parse_event,
    _parse_header,
    read_bytes,
    read_session,
)
from beavertui.tui import caps
from beavertui.tui.app import BeaverApp
from beavertui.tui.session_screen import FIRST_BYTES, FIRST_EVENTS, SessionScreen
from tests.tui.conftest import SIZE, wait_for

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo" / "degenerate_repair.jsonl"
FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LOADED_S = 120.0
"""How long a test waits for the load worker at most (a safety net under load, not a timing check)."""


def demo() -> list[dict[str, object]]:
    return [json.loads(line) for line in DEMO.read_text().splitlines()]


def write(path: Path, objs: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


def last_of(objs: list[dict[str, object]], kind: str) -> dict[str, object]:
    return next(o for o in reversed(objs) if o.get("kind") == kind)


def many_sanitizer_runs(tmp_path: Path, n: int) -> Path:
    objs = demo()
    verdict = objs.index(last_of(objs, "verdict"))
    it = last_of(objs, "verdict")["iteration"]
    result = {"stage": "sanitize", "command": "compute-sanitizer ./t", "rc": 0, "log": "ok\n"}
    runs = [
        {"t": 1.0, "kind": "sanitize", "iteration": it, "tool": "memcheck", "result": result, "records": []}
        for _ in range(n)
    ]
    return write(tmp_path / "many.jsonl", [*objs[:verdict], *runs, *objs[verdict:]])


# ------------------------------------------------------------------ loading in steps


async def test_the_screen_folds_a_bounded_prefix_before_its_first_frame(tmp_path: Path) -> None:
    """5,000 sanitizer runs: at most FIRST_EVENTS events are folded when the screen is made; the header
    says the file is being read; after the first frame a worker folds the rest, to the plain reader's state."""
    path = many_sanitizer_runs(tmp_path, 5000)
    header, events, problem = read_session(path)
    assert header is not None and problem is None and len(events) > 2 * FIRST_EVENTS
    reader = SessionReader(path)
    screen = SessionScreen(header, reader=reader, path=path)
    assert screen.state.events <= FIRST_EVENTS and reader.offset <= FIRST_BYTES + len(DEMO.read_bytes())
    assert screen.view.reading.startswith("reading ") and not reader.done
    app = BeaverApp(lambda: screen)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.view.reading == "", timeout=LOADED_S)
        assert app.screen.state == fold(header, events)
        assert app.screen.view.cursor == app.screen.state.iteration and app.screen.view.problem is None
        assert "… 4,950 more runs not shown" in app.screen.query_one("#sanitizer").text


async def test_a_list_of_events_is_folded_in_steps_too(tmp_path: Path) -> None:
    header, events, problem = read_session(many_sanitizer_runs(tmp_path, 3000))
    screen = SessionScreen(header, events, problem=problem)  # type: ignore[arg-type]
    assert screen.state.events == FIRST_EVENTS
    app = BeaverApp(lambda: screen)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.view.reading == "", timeout=LOADED_S)
        assert app.screen.state == fold(header, events)  # type: ignore[arg-type]


async def test_a_line_longer_than_the_first_read_is_left_to_the_worker(tmp_path: Path) -> None:
    """A 3 MiB run log: the first frame is drawn from the events before it; the damage after it is
    shown once everything is read, as replay shows it."""
    objs = demo()
    run = last_of(objs, "run")
    run["result"]["log"] = "x" * 79 + "\n" + ("y" * 79 + "\n") * 40_000  # type: ignore[index]
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objs) + '{"t": 1, "kind": "nonsense"}\n')
    header, events, problem = read_session(path)
    assert header is not None and problem is not None and problem.startswith("invalid event at line")
    reader = SessionReader(path)
    screen = SessionScreen(header, reader=reader, path=path)
    assert reader.offset <= FIRST_BYTES
    assert all(a.run is None or a.iteration != run["iteration"] for a in screen.state.attempts)
    assert screen.view.problem is None
    app = BeaverApp(lambda: screen)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.view.reading == "", timeout=LOADED_S)
        assert app.screen.state == fold(header, events) and app.screen.view.problem == problem
        await wait_for(pilot, lambda: "truncated" in app.screen.query_one("#log").text, timeout=LOADED_S)


# ------------------------------------------------------------------ the lazy reader and the fast fold


def whole_file_reading(path: Path) -> tuple[object, list[object], str | None]:
    """The session reader as it was: the file decoded whole, then split into lines."""
    text = read_bytes(path).decode("utf-8", errors="replace")
    if not text.strip():
        return None, [], "empty file"
    lines = text.split("\n")
    ends_clean = text.endswith("\n")
    if ends_clean:
        lines.pop()
    header, problem = _parse_header(lines[0])
    if header is None:
        if len(lines) == 1 and not ends_clean and problem and problem.startswith("bad JSON"):
            problem = "truncated header line"
        return None, [], problem
    events: list[object] = []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        event, problem = _parse_event(line, i, i == len(lines) and not ends_clean)
        if event is None:
            return header, events, problem
        events.append(event)
    return header, events, None


PIECES = [b"\n", b"\r\n", b" ", b"\xe2\x82", b"\xff", b"{", b"}", b"\x1c", "\u3000".encode(), b"null",
          b'{"kind":"end"}', b"\\ud800", b'{"kind":"reply_delta","iteration":1,"text":"\\udc00"}']  # fmt: skip
LINES = DEMO.read_bytes().split(b"\n")


@FAST
@given(
    picks=st.lists(st.integers(0, len(LINES) - 1), max_size=8),
    edits=st.lists(st.tuples(st.integers(0, 20_000), st.integers(0, 2), st.sampled_from(PIECES)), max_size=4),
    chunks=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 20_000)), min_size=1, max_size=6),
)
def test_the_lazy_reader_reads_every_file_as_reading_it_whole_did(
    tmp_path: Path, picks: list[int], edits: list[tuple[int, int, bytes]], chunks: list[tuple[int, int]]
) -> None:
    data = b"\n".join([LINES[0], *(LINES[i] for i in picks)])
    for where, op, piece in edits:
        where %= len(data) + 1
        data = [data[:where] + piece + data[where:], data[:where], data[:where] + data[where + 7 :]][op]
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    expected = untimed(*whole_file_reading(path))
    assert untimed(*read_session(path)) == expected
    reader = SessionReader(path)  # in steps of any size, as the screen reads
    got = []
    for n, size in chunks * 50:
        if reader.done:
            break
        got += reader.read(n, size)
    got += reader.read()
    assert untimed(reader.header, got, reader.problem) == expected


def untimed(header: object, events: list[object], problem: str | None) -> tuple[object, ...]:
    """What was read, without the time stamps (a line without one is stamped when it is read)."""
    dump = [x.model_dump(exclude={"t"}) for x in (header, *events) if x is not None]  # type: ignore[attr-defined]
    return header is None, dump, problem


KINDS = ["request", "delta", "reply", "candidate", "run", "sanitize", "verdict", "stalled", "infra", "end"]


def _event(kind: str, it: int, i: int) -> ev.Event:
    result = ev.StageResult(stage="run", command="./t", rc=i % 2, log=f"log {i}")
    return {
        "request": lambda: ev.Request(iteration=it, messages=[]),
        "delta": lambda: ev.ReplyDelta(iteration=it, text=f"<{i}>"),
        "reply": lambda: ev.Reply(iteration=it, content=f"reply {i}"),
        "candidate": lambda: ev.Candidate(iteration=it, code=f"int x = {i};"),
        "run": lambda: ev.Ran(iteration=it, result=result),
        "sanitize": lambda: ev.Sanitized(iteration=it, tool="memcheck", result=result),
        "verdict": lambda: ev.Verdict(iteration=it, category="passed", signature="", correct=True),
        "stalled": lambda: ev.Stalled(iteration=it, detector="no_progress", detail=str(i)),
        "infra": lambda: ev.InfraError(iteration=it, source="gpu", detail=str(i)),
        "end": lambda: ev.SessionEnd(stop_reason="budget", iterations=it, success=False),
    }[kind]()


@FAST
@given(
    steps=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(1, 4)), max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=3),
)
def test_folding_a_sequence_equals_applying_its_events_one_at_a_time(
    steps: list[tuple[str, int]], cuts: list[int]
) -> None:
    header, _events, _problem = read_session(DEMO)
    assert header is not None
    events = [_event(kind, it, i) for i, (kind, it) in enumerate(steps)]
    one_by_one = initial(header)
    for e in events:
        one_by_one = apply(one_by_one, e)
    assert fold(header, events) == one_by_one
    state, start = initial(header), 0
    for cut in sorted(cuts):
        state, start = fold_more(state, events[start:cut]), max(start, cut)
    assert fold_more(state, events[start:]) == one_by_one


# ------------------------------------------------------------------ what a pane is handed


def huge_state_file(tmp_path: Path) -> Path:
    """Every list and text of the last attempt far beyond the panes' caps, in fewer than FIRST_EVENTS events
    (the screen folds it whole before its first frame; loading in steps is tested above)."""
    objs = demo()
    it = last_of(objs, "verdict")["iteration"]
    v = last_of(objs, "verdict")
    v.update(
        reason="r" * 300_000, signature="s" * 300_000, flags=[f"flag_{i}: e" for i in range(20_000)],
        decisive=[f"error {i}" for i in range(20_000)], category="c" * 50_000,
    )  # fmt: skip
    last_of(objs, "run")["result"]["log"] = "z" * 1_000_000  # type: ignore[index]
    last_of(objs, "candidate")["code"] = ("x = 1; " * 500 + "\n") * 1200
    timing = last_of(objs, "timing")["result"]
    timing["candidate_samples"] = timing["candidate_host_samples"] = [0.1] * 300_000  # type: ignore[index]
    records = [{"tool": "memcheck", "kind": f"k{i % 400}", "kernel": "q" * 3000} for i in range(5000)]
    extra = [
        {"t": 1, "kind": "sanitize", "iteration": it, "tool": "memcheck", "error_count": 1, "records": records,
         "result": {"stage": "sanitize", "command": "c" * 100_000, "rc": 1, "log": "l" * 300_000}},
        *({"t": 1, "kind": "infra_error", "iteration": it, "source": "gpu", "detail": "d" * 3000} for _ in range(900)),
        *({"t": 1, "kind": "stalled", "iteration": it, "detector": "no_progress", "detail": "t" * 90_000} for _ in range(2)),
    ]  # fmt: skip
    at = objs.index(v)
    return write(tmp_path / "huge.jsonl", [*objs[:at], *extra * 1, *objs[at:]])


@pytest.mark.slow
async def test_no_pane_is_handed_more_than_its_caps(tmp_path: Path) -> None:
    """Each pane's rendered text stays within a bound set by the caps, with the notes saying what was left
    out; the diff pane draws its heavy first render after the first frame."""
    header, events, problem = read_session(huge_state_file(tmp_path))
    assert header is not None and problem is None and len(events) <= FIRST_EVENTS
    app = BeaverApp(lambda: SessionScreen(header, events))
    bound = 4 * caps.TEXT_CHARS + caps.ITEMS * caps.LINE_CHARS * 4
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#diff").deferred == 1
        await wait_for(pilot, lambda: "truncated" in screen.query_one("#diff").text, timeout=LOADED_S)
        for key in ("", "r", "s", "d"):
            if key:
                await pilot.press(key)
                await pilot.pause()
            for pane in ("#diff", "#log", "#sanitizer", "#speedup", "#stagnation"):
                text = screen.query_one(pane).text
                assert len(text) < bound, (key, pane, len(text))
        log = screen.query_one("#log").text
        assert "truncated" in log and "… 850 more infrastructure errors" not in log  # raw log now
        await pilot.press("r")
        await pilot.pause()
        log = screen.query_one("#log").text
        assert "… 19,950 more flags" in log and "… 850 more infrastructure errors" in log
        assert "bytes not shown" in log
        speed = screen.query_one("#speedup").text
        assert "of the first 100,000 of 300,000 samples" in speed and "… 19,950 more flags" in speed
        sanitizer = screen.query_one("#sanitizer").text
        assert "388 more kinds of finding" in sanitizer
        header_line = str(screen.query_one("#header").render())
        assert len(header_line) < 2 * SIZE[0] + 10


async def test_a_typical_session_is_drawn_in_its_first_frame() -> None:
    """The demo session: nothing is deferred, nothing is folded after the first frame."""
    header, events, _problem = read_session(DEMO)
    assert header is not None
    screen = SessionScreen(header, events)
    assert screen.state.events == len(events) and screen.view.reading == ""
    app = BeaverApp(lambda: screen)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert all(app.screen.query_one(p).deferred == 0 for p in ("#diff", "#log", "#sanitizer"))
        assert "iteration 4 against iteration 3" in app.screen.query_one("#diff").text
