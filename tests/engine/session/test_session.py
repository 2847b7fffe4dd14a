"""Session files: append-only writing, damaged-file reading, peek from the end, follow while written."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from beavertui.engine.errors import SessionFileError
from beavertui.engine.session.events import (
    Message,
    ModelInfo,
    Reply,
    ReplyDelta,
    Request,
    SessionEnd,
    SessionHeader,
    TaskRef,
    Verdict,
)
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import (
    SessionWriter,
    default_path,
    follow,
    load_session,
    peek,
    read_session,
)


def make_header(session_id: str = "s1") -> SessionHeader:
    task = TaskRef(
        id="vec_add_oob",
        family="elementwise",
        label="illegal_memory_access",
        corpus="/corpus",
        layout="native",
        solution_file="solution.cu",
        broken_start="__global__ void k() {}\n",
    )
    return SessionHeader(
        session_id=session_id,
        tool_version="0.1.0",
        task=task,
        model=ModelInfo(name="scripted:demo", kind="scripted"),
        protocol=Protocol(),
    )


def write_three(path: Path) -> None:
    with SessionWriter(path, make_header()) as w:
        w.append(Request(iteration=1, messages=[Message(role="user", content="fix it")]))
        assert w.append(ReplyDelta(iteration=1, text="par")) is False
        w.append(Reply(iteration=1, content="```cuda\nx\n```"))
        w.append(Verdict(iteration=1, category="buildability", signature="error: x", correct=False))


def test_round_trip_skips_transient_events(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path)
    header, events, problem = read_session(path)
    assert problem is None
    assert header is not None and header.session_id == "s1"
    assert [e.kind for e in events] == ["request", "reply", "verdict"]
    assert len(path.read_text().splitlines()) == 4


def test_each_line_is_flushed_before_close(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = SessionWriter(path, make_header(), fsync=True)
    w.append(Reply(iteration=1, content="hi"))
    # Another reader sees both lines while the writer is still open (a killed run leaves them).
    header, events, problem = read_session(path)
    assert header is not None and [e.kind for e in events] == ["reply"] and problem is None
    w.close()


def test_truncated_last_line_keeps_prefix(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path)
    text = path.read_text()
    path.write_text(text[: len(text) - 25])
    header, events, problem = read_session(path)
    assert header is not None
    assert [e.kind for e in events] == ["request", "reply"]
    assert problem == "truncated last line (line 4)"


def test_bad_json_in_the_middle_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = "{not json\n"
    path.write_text("".join(lines))
    _header, events, problem = read_session(path)
    assert [e.kind for e in events] == ["request"]
    assert problem is not None and problem.startswith("bad JSON at line 3")


def test_unknown_event_kind_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path)
    with open(path, "a") as fh:
        fh.write('{"kind": "teleport", "iteration": 1}\n')
    _, events, problem = read_session(path)
    assert len(events) == 3
    assert problem is not None and problem.startswith("invalid event at line 5")


def test_unknown_format_version(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    header = make_header().model_copy(update={"format_version": 99})
    path.write_text(header.model_dump_json() + "\n")
    h, events, problem = read_session(path)
    assert h is None and events == []
    assert problem == "unknown format version 99 (this beavertui reads 1 and 2)"
    with pytest.raises(SessionFileError, match="unknown format version 99"):
        load_session(path)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(SessionFileError, match="no such session file"):
        read_session(tmp_path / "nope.jsonl")
    (tmp_path / "e.jsonl").write_text("")
    assert read_session(tmp_path / "e.jsonl") == (None, [], "empty file")


def test_writer_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path)
    with pytest.raises(SessionFileError, match="already exists"):
        SessionWriter(path, make_header())


def test_reopen_cuts_damaged_tail_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path)
    with open(path, "a") as fh:
        fh.write('{"kind": "reply", "itera')  # killed mid-line
    writer, prefix = SessionWriter.reopen(path)
    assert len(prefix) == 3
    writer.append(SessionEnd(stop_reason="budget", iterations=1, success=False))
    writer.close()
    _, events, problem = read_session(path)
    assert problem is None
    assert [e.kind for e in events] == ["request", "reply", "verdict", "end"]
    with pytest.raises(SessionFileError, match="already ended"):
        SessionWriter.reopen(path)


def test_secrets_are_redacted(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionWriter(path, make_header(), redact=["sk-very-secret-123"]) as w:
        w.append(Reply(iteration=1, content="the key is sk-very-secret-123"))
    text = path.read_text()
    assert "sk-very-secret-123" not in text
    assert "[redacted]" in text


def test_peek_reads_header_and_end(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionWriter(path, make_header()) as w:
        # A large event before the end: peek must still find the last line by seeking from the end.
        w.append(Request(iteration=3, messages=[Message(role="user", content="x" * 200_000)]))
        w.append(Verdict(iteration=3, category="passed", signature="", correct=True, success=True))
        w.append(SessionEnd(stop_reason="passed", iterations=3, success=True, best_speedup=1.2))
    p = peek(path, tail_bytes=1024)
    assert p.header is not None and p.header.task.id == "vec_add_oob"
    assert p.end is not None and p.end.stop_reason == "passed"
    assert p.last_iteration == 3
    assert p.problem is None
    assert p.size == path.stat().st_size


def test_peek_of_running_and_damaged_sessions(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionWriter(path, make_header()) as w:
        w.append(Request(iteration=2, messages=[]))
    with open(path, "a") as fh:
        fh.write('{"kind": "re')
    p = peek(path)
    assert p.end is None
    assert p.last is not None and p.last.kind == "request"
    assert p.last_iteration == 2
    assert p.problem == "damaged last line"


def test_follow_yields_lines_as_they_are_appended(tmp_path: Path) -> None:
    path = tmp_path / "live" / "s.jsonl"
    path.parent.mkdir()
    seen: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        for item in follow(path, stop=stop, poll_ms=50):
            seen.append(item.kind)

    thread = threading.Thread(target=reader)
    thread.start()
    w = SessionWriter(path, make_header())
    w.append(Request(iteration=1, messages=[]))
    deadline = time.monotonic() + 5
    while seen != ["header", "request"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert seen == ["header", "request"]
    w.append(SessionEnd(stop_reason="budget", iterations=1, success=False))
    w.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert seen == ["header", "request", "end"]
    stop.set()


def test_follow_stops_on_idle_timeout(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionWriter(path, make_header()) as w:
        w.append(Request(iteration=1, messages=[]))
    start = time.monotonic()
    kinds = [e.kind for e in follow(path, idle_timeout_s=0.3, poll_ms=50)]
    assert kinds == ["header", "request"]
    assert time.monotonic() - start < 3


def test_default_path(tmp_path: Path) -> None:
    h = make_header("abc").model_copy(update={"run_id": "r7", "sample": 2})
    assert default_path(tmp_path, h) == tmp_path / "r7" / "vec_add_oob-s2-abc.jsonl"


def test_deeply_nested_line_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_three(path)
    with open(path, "a") as fh:
        fh.write("[" * 100_000 + "\n")
    _, events, problem = read_session(path)
    assert len(events) == 3
    assert problem == "bad JSON at line 5: nested too deeply"
    (tmp_path / "h.jsonl").write_text("[" * 100_000 + "\n")
    assert read_session(tmp_path / "h.jsonl") == (
        None,
        [],
        "bad JSON at line 1 (the header): nested too deeply",
    )
