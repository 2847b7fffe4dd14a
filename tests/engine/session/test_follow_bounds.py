"""`replay --follow` reads a session file bounded like every other reader: a followed file that grows past a
session file's 64 MiB (whole lines, or one line that never gets its newline) or a header line past 16 Mi
characters ends the follow with a one-line error, and no more than the bound is ever held in memory.

The growing files are sparse (their size grows, nothing is written to disk), so the bound itself, not a
smaller one for the test, is what is checked.
"""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from beavertui.engine.errors import SessionFileError
from beavertui.engine.session.events import Reply, Request
from beavertui.engine.session.store import (
    MAX_HEADER_CHARS,
    MAX_SESSION_BYTES,
    SessionWriter,
    dump_line,
    follow,
)
from tests.engine.session.test_session import make_header


def _follow_all(path: Path, stop: threading.Event) -> tuple[list[str], str | None, int]:
    """Follow until the follow ends or ``stop``; the kinds seen, the error, the peak of traced memory."""
    kinds: list[str] = []
    error = None
    tracemalloc.start()
    try:
        for item in follow(path, stop=stop, idle_timeout_s=5, poll_ms=50):
            kinds.append(item.kind)
    except SessionFileError as exc:
        error = str(exc)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return kinds, error, peak


def test_a_line_that_never_ends_stops_the_follow_at_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionWriter(path, make_header()) as w:
        w.append(Request(iteration=1, messages=[]))
    with open(path, "ab") as fh:
        fh.write(b'{"kind":"reply","iteration":1,"content":"')
    stop = threading.Event()
    grown = threading.Event()

    def grow() -> None:  # the line grows, 16 MiB at a time, to 4 times the bound; never a newline
        size = path.stat().st_size
        while size < 4 * MAX_SESSION_BYTES and not stop.is_set():
            size += 16 << 20
            with open(path, "r+b") as fh:
                fh.truncate(size)
            time.sleep(0.01)
        grown.set()

    writer = threading.Thread(target=grow)
    writer.start()
    try:
        kinds, error, peak = _follow_all(path, stop)
    finally:
        stop.set()
        writer.join(timeout=10)
    assert kinds == ["header", "request"]
    assert error is not None, "the follow ended without an error, holding the unending line"
    assert error == (
        f"{path}: grew past the {MAX_SESSION_BYTES:,} bytes a session file may have; stopped following it"
    )
    # the bound and the copies a read makes of it; an unbounded follow held the whole 256 MiB and more
    assert peak < 3 * MAX_SESSION_BYTES, f"{peak:,} bytes held"


def test_a_file_of_whole_lines_past_the_bound_stops_the_follow(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = (dump_line(Reply(iteration=1, content="x" * (16 << 20))) + "\n").encode()
    with SessionWriter(path, make_header()) as w:
        w.append(Request(iteration=1, messages=[]))
    start = path.stat().st_size
    with open(path, "ab") as fh:  # the session as a writer gone wrong leaves it: 80 MiB of events
        for _ in range(5):
            fh.write(line)
    kinds: list[str] = []
    with pytest.raises(SessionFileError) as caught:
        for item in follow(path, idle_timeout_s=5, poll_ms=50):
            kinds.append(item.kind)
    assert str(caught.value) == (
        f"{path}: grew past the {MAX_SESSION_BYTES:,} bytes a session file may have; stopped following it"
    )
    # the lines whole within the bound were read, then the follow ended
    assert kinds == ["header", "request"] + ["reply"] * ((MAX_SESSION_BYTES - start) // len(line))


def test_a_header_line_past_its_bound_stops_the_follow(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    header = dump_line(make_header())
    assert header.startswith('{"t":')
    with open(path, "wb") as fh:  # a header whose broken start never ends: 17 Mi characters, no newline
        fh.write(header[: header.index('"broken_start":"') + 16].encode())
        fh.write(b"x" * (MAX_HEADER_CHARS + (1 << 20)))
    kinds, error, _peak = _follow_all(path, threading.Event())
    assert kinds == []
    assert error == (
        f"{path}: the header line has more than the {MAX_HEADER_CHARS:,} characters a header may have; "
        "stopped following it"
    )


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    os.mkfifo(path)
    errors: list[str] = []

    def read() -> None:  # in a thread: opening a FIFO for reading waited for a writer, for ever
        try:
            list(follow(path, idle_timeout_s=1, poll_ms=50))
        except SessionFileError as exc:
            errors.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():
        with open(path, "wb"):  # let the waiting open return, so the thread ends
            pass
        reader.join(timeout=10)
        pytest.fail("following a FIFO waited for a writer")
    assert errors == [f"{path}: is a FIFO, not a session file"]
