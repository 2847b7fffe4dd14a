"""Session files: an append-only JSON-Lines event log, one header line then one event per line.

The session file is the API between running and viewing: the loop appends, everything else reads. Lines are
written whole and flushed one at a time, so a run killed at any moment leaves a readable prefix; reading
never raises on damage but returns the valid prefix and says what is wrong. Transient events (streamed
deltas) are never written. This module must not interpret events beyond parsing them (the reducer does
that) and never stores credentials: the writer removes given secrets from the fields of an event that
carry endpoint text (``redaction.redact_event``) as a last line of defence, never from the serialised line.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from beavertui.engine.errors import SessionFileError
from beavertui.engine.fileio import MAX_WALK_DEPTH, open_regular, walk
from beavertui.engine.session.events import (
    EVENT_ADAPTER,
    FORMAT_VERSION,
    READABLE_VERSIONS,
    TRANSIENT_KINDS,
    Event,
    InfraError,
    SessionEnd,
    SessionHeader,
)
from beavertui.engine.session.redaction import REDACTED, Secrets, redact_event

__all__ = ["REDACTED"]

#: The largest session file any reader accepts. The writer caps what goes in (replies, logs) far below it.
MAX_SESSION_BYTES = 64 << 20
#: The longest header line any reader accepts (and the writer writes): it holds the task's broken start and
#: reference in full, kilobytes for real tasks. A 64 MiB header took 0.3-0.4 s to parse alone, which kept
#: the TUI from painting within 1 s; 16 MiB parses in under 0.1 s.
MAX_HEADER_CHARS = 16 << 20

#: A lone UTF-16 surrogate: valid in a JSON escape and in a Python str, but not encodable as UTF-8.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def scrub(value: object) -> object:
    """``value`` (JSON data) with every lone surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value


def dump_line(item: SessionHeader | Event) -> str:
    """The JSON line of a header or event, as session files hold it."""
    return _dump(item)


def _dump(item: SessionHeader | Event) -> str:
    """One JSON line; text that cannot be UTF-8 (a lone surrogate from an endpoint) is written as U+FFFD."""
    try:
        return item.model_dump_json()
    except PydanticSerializationError:
        data = scrub(item.model_dump(mode="json"))
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class SessionWriter:
    """Appends events to a session file, one flushed line each.

    ``SessionWriter(path, header)`` creates the file (and its folder) and writes the header line.
    ``SessionWriter.reopen(path)`` continues an existing file after its valid prefix (a damaged tail is cut
    off), for resuming a killed run. Use as a context manager or call ``close()``.
    """

    def __init__(
        self,
        path: str | Path,
        header: SessionHeader,
        *,
        fsync: bool = False,
        redact: Sequence[str] = (),
        _fh: IO[str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.header = header
        self.fsync = fsync
        self._secrets = Secrets.of(redact)
        self._lock = threading.Lock()
        self.count = 0
        """Events written (the header not counted)."""
        if _fh is not None:
            self._fh = _fh
            return
        line = _dump(header)
        _parsed, problem = _parse_header(line)
        if problem is not None:  # e.g. a number that JSON cannot hold, written as null
            raise SessionFileError(
                f"{self.path}: refusing to write a header the reader would refuse: {problem}"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size > 0:
            raise SessionFileError(
                f"{self.path}: already exists, and a session file is never written over: give another path"
            )
        self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._write_line(line)

    @classmethod
    def reopen(
        cls,
        path: str | Path,
        *,
        fsync: bool = False,
        redact: Sequence[str] = (),
        continue_ended: bool = False,
    ) -> tuple[SessionWriter, list[Event]]:
        """Open an existing session for appending after its valid prefix; returns the writer and that prefix.

        ``continue_ended``: a session that an infrastructure failure ended or the user stopped
        (``CONTINUABLE_ENDS``) is continued too, without that end and the failures that caused it."""
        path = Path(path)
        header, events, problem = read_session(path)
        if header is None:
            raise SessionFileError(f"{path}: cannot continue: {problem}")
        kept = continuable_prefix(events) if continue_ended else events
        if kept and isinstance(kept[-1], SessionEnd):
            raise SessionFileError(f"{path}: the session already ended ({kept[-1].stop_reason})")
        valid = _valid_prefix_bytes(path) if kept is events else _prefix_bytes(path, len(kept))
        events = kept
        with open(path, "r+b") as raw:
            raw.truncate(valid)
        fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        writer = cls(path, header, fsync=fsync, redact=redact, _fh=fh)
        writer.count = len(events)
        return writer, events

    def _write_line(self, text: str) -> None:
        with self._lock:
            self._fh.write(text + "\n")
            self._fh.flush()
            if self.fsync:
                os.fsync(self._fh.fileno())

    def append(self, event: Event) -> bool:
        """Write one event; transient events are skipped (returns whether it was written)."""
        if event.kind in TRANSIENT_KINDS:
            return False
        self._write_line(_dump(redact_event(event, self._secrets)))
        self.count += 1
        return True

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SessionRecorder:
    """Records a session's stream as it is produced: its header opens the file, each event is appended.

    The one way a session file is written (live, batch, branches, attribution). ``writer``: an already open
    file (resuming after a valid prefix); the stream's re-yielded header is then not written again.
    """

    def __init__(
        self, path: str | Path, *, redact: Sequence[str] = (), writer: SessionWriter | None = None
    ) -> None:
        self.path = Path(path)
        self.redact = tuple(redact)
        self.writer = writer

    def take(self, item: SessionHeader | Event) -> None:
        if isinstance(item, SessionHeader):
            if self.writer is None:
                self.writer = SessionWriter(self.path, item, redact=self.redact)
            return
        if self.writer is None:
            raise SessionFileError(f"{self.path}: an event came before the session header")
        self.writer.append(item)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def __enter__(self) -> SessionRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record(
    path: str | Path,
    header: SessionHeader,
    stream: Iterable[SessionHeader | Event],
    *,
    redact: Sequence[str] = (),
) -> Iterator[Event]:
    """Write ``header``, then each event of ``stream`` as it comes, yielding it on; closed at the end."""
    with SessionRecorder(path, redact=redact) as recorder:
        recorder.take(header)
        for event in stream:
            if isinstance(event, SessionHeader):  # pragma: no cover - the loop's contract
                raise TypeError("a session stream yields one header, first")
            recorder.take(event)
            yield event


# ------------------------------------------------------------------------------------------------ reading


def _loads(line: str) -> object:
    data = json.loads(line)
    return scrub(data) if _SURROGATE_ESCAPE.search(line) else data


def _parse_header(line: str) -> tuple[SessionHeader | None, str | None]:
    if len(line) > MAX_HEADER_CHARS:
        return None, (
            f"the header line has {len(line):,} characters, more than the {MAX_HEADER_CHARS:,} a header may have"
        )
    try:
        data = _loads(line)
    except json.JSONDecodeError as exc:
        return None, f"bad JSON at line 1 (the header): {exc.msg}"
    except RecursionError:
        return None, "bad JSON at line 1 (the header): nested too deeply"
    if not isinstance(data, dict) or data.get("kind") != "header":
        return None, "line 1 is not a session header"
    version = data.get("format_version")
    if version not in READABLE_VERSIONS:
        readable = " and ".join(str(v) for v in READABLE_VERSIONS)
        return None, f"unknown format version {version!r} (this beavertui reads {readable})"
    try:
        return SessionHeader.model_validate(data), None
    except ValidationError as exc:
        return None, f"invalid header at line 1: {_first_error(exc)}"


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid"))


def _parse_event(
    line: str, number: int, last: bool, version: int = FORMAT_VERSION
) -> tuple[Event | None, str | None]:
    try:
        data = _loads(line)
    except json.JSONDecodeError as exc:
        if last:
            return None, f"truncated last line (line {number})"
        return None, f"bad JSON at line {number}: {exc.msg}"
    except RecursionError:
        return None, f"bad JSON at line {number}: nested too deeply"
    try:
        return EVENT_ADAPTER.validate_python(data, context={"format_version": version}), None
    except ValidationError as exc:
        return None, f"invalid event at line {number}: {_first_error(exc)}"


def read_bytes(path: Path) -> bytes:
    """A session file's bytes; SessionFileError for what is not a session file (missing, a folder, a FIFO
    or device, a link loop, larger than MAX_SESSION_BYTES)."""
    fd, size = open_regular(path, SessionFileError, "session file")
    with os.fdopen(fd, "rb") as fh:
        if size > MAX_SESSION_BYTES:
            raise SessionFileError(
                f"{path}: {size:,} bytes, larger than the {MAX_SESSION_BYTES:,} bytes a session file may have"
            )
        data = fh.read(MAX_SESSION_BYTES + 1)
    if len(data) > MAX_SESSION_BYTES:
        raise SessionFileError(f"{path}: larger than the {MAX_SESSION_BYTES:,} bytes a session file may have")
    return data


def read_text(path: Path) -> str:
    """A session file's text (undecodable bytes replaced); errors as ``read_bytes``."""
    return read_bytes(path).decode("utf-8", errors="replace")


def _decode(raw: bytes | memoryview) -> str:
    return str(raw, "utf-8", errors="replace")


class SessionReader:
    """A session file read a line at a time: the header when opened, then events as they are asked for.

    ``read_session`` is this reader read to the end, so a viewer that folds a large file in steps sees
    the same events, and the same problem, as every other reader. Lines are decoded one at a time (a
    newline byte is never part of a UTF-8 sequence, so this equals decoding the file whole); the file's
    bytes are released once it has been read to the end.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._data = read_bytes(self.path)
        self.size = len(self._data)
        """Bytes in the file."""
        self.offset = 0
        """Bytes read so far (whole lines)."""
        self.count = 0
        """Events read so far."""
        self.header: SessionHeader | None = None
        self._version = FORMAT_VERSION
        self.problem: str | None = None
        """What is wrong with the file, once reading stopped at it (or at once for the header)."""
        self.done = False
        """Every line has been read, or reading stopped at a bad one."""
        self._number = 1
        self._view = memoryview(self._data)
        raw, end = self._line(0)
        first = _decode(raw)
        if not first.strip() and not _decode(self._data).strip():
            self._finish("empty file")
            return
        self.header, problem = _parse_header(first)
        if self.header is None:
            truncated = end == self.size and not self._data.endswith(b"\n")
            if truncated and problem and problem.startswith("bad JSON"):
                problem = "truncated header line"
            self._finish(problem)
            return
        self._version = self.header.format_version
        self.offset = end
        if self.offset >= self.size:
            self._finish(None)

    def _line(self, start: int) -> tuple[memoryview, int]:
        """The line starting at ``start`` (without its newline) and where the next one starts."""
        nl = self._data.find(b"\n", start)
        if nl < 0:
            return self._view[start:], self.size
        return self._view[start:nl], nl + 1

    def _finish(self, problem: str | None) -> None:
        self.problem, self.done = problem, True
        self._data, self._view = b"", memoryview(b"")

    def read(self, max_events: int | None = None, max_bytes: int | None = None) -> list[Event]:
        """The next events: at most ``max_events``, and no line that would take this call past ``max_bytes``
        (so a huge line is left for a later call). Reading stops for good at the first bad line."""
        events: list[Event] = []
        start = self.offset
        while not self.done and (max_events is None or len(events) < max_events):
            nl = self._data.find(b"\n", self.offset)
            end = self.size if nl < 0 else nl + 1
            if max_bytes is not None and end - start > max_bytes:
                break
            line = _decode(self._view[self.offset : end if nl < 0 else nl])
            self._number += 1
            self.offset = end
            if line.strip():
                last = end == self.size and not self._data.endswith(b"\n")
                event, problem = _parse_event(line, self._number, last, self._version)
                if event is None:
                    self._finish(problem)
                    break
                events.append(event)
                self.count += 1
            if self.offset >= self.size:
                self._finish(None)
        return events


def read_session(path: str | Path) -> tuple[SessionHeader | None, list[Event], str | None]:
    """Read a session file: (header, the valid prefix of events, what is wrong or None).

    Never raises for a damaged file: the header is None when line 1 is unusable, and reading stops at
    the first bad line. A missing file is a SessionFileError.
    """
    reader = SessionReader(path)
    if reader.header is None:
        return None, [], reader.problem
    events = reader.read()
    return reader.header, events, reader.problem


def load_session(path: str | Path) -> tuple[SessionHeader, list[Event]]:
    """Strict reading: the header and events, or a SessionFileError naming the problem."""
    header, events, problem = read_session(path)
    if header is None or problem is not None:
        raise SessionFileError(f"{path}: {problem}")
    return header, events


#: How a session may have ended that a resume continues: the machine or the user ended it, not the loop.
CONTINUABLE_ENDS = ("error", "stopped")


def continuable_prefix(events: list[Event]) -> list[Event]:
    """The events a resume continues from: a session that ended by an infrastructure failure or was stopped
    loses that end and the infrastructure failures just before it, so its cut attempt is redone."""
    out = list(events)
    if out and isinstance(out[-1], SessionEnd) and out[-1].stop_reason in CONTINUABLE_ENDS:
        out.pop()
        while out and isinstance(out[-1], InfraError):
            out.pop()
    return out


def _prefix_bytes(path: Path, n_events: int) -> int:
    """Byte length of the header line and the first ``n_events`` event lines (blank lines between them kept)."""
    offset, seen = 0, -1
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                if seen == n_events:
                    break
                seen += 1
            offset += len(raw)
    return offset


def _valid_prefix_bytes(path: Path) -> int:
    """Byte length of the leading complete, parseable lines of a session file."""
    offset = 0
    version = FORMAT_VERSION
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break
            line = raw.decode("utf-8", errors="replace")
            if line.strip():
                if number == 1:
                    header = _parse_header(line)[0]
                    ok = header is not None
                    version = header.format_version if header is not None else version
                else:
                    ok = _parse_event(line, number, False, version)[0] is not None
                if not ok:
                    break
            offset += len(raw)
    return offset


# ------------------------------------------------------------------------------------------------ finding

#: Files beside a batch's ``run.json`` that end in ``.jsonl`` but are not sessions.
RUN_LOGS = ("infra.jsonl",)


def is_session_file(path: Path) -> bool:
    """A ``*.jsonl`` that may be a session: not hidden (a writer's temporary file), and not the
    infrastructure log beside a batch run's run.json."""
    if not path.name.endswith(".jsonl") or path.name.startswith("."):
        return False
    return path.name not in RUN_LOGS or not (path.parent / "run.json").is_file()


def session_files(
    root: str | Path, *, left_out: list[str] | None = None, max_depth: int = MAX_WALK_DEPTH
) -> Iterator[Path]:
    """Every session file under a folder, in a stable order (the file itself when ``root`` is one).

    The one list of a run's files that browse, metrics, export, attribute and the recorded toolchain share,
    so they see the same files: ``fileio.walk`` (iterative, at most ``max_depth`` folders deep, links not
    followed) filtered by ``is_session_file``. A FIFO, device or dangling link named ``*.jsonl`` is listed
    (its reader says what it is); a folder not walked (unreadable, too deep) is added to ``left_out`` as one
    line naming it and why.
    """
    root = Path(root)
    if not root.is_dir():
        yield root
        return
    for path in walk(root, left_out=left_out, max_depth=max_depth):
        if is_session_file(path):
            yield path


# ------------------------------------------------------------------------------------------------ peek


@dataclass(frozen=True)
class SessionPeek:
    """What a browser needs to list a session without reading all of it."""

    path: Path
    header: SessionHeader | None
    last: Event | None
    """The last parseable event (None if none or the tail is damaged)."""
    end: SessionEnd | None
    """The final event when the session is complete."""
    last_iteration: int
    """Iteration of the last event that carries one (0 if none)."""
    size: int
    """File size in bytes."""
    mtime: float
    """Modification time, seconds since the epoch."""
    problem: str | None = None


def peek(path: str | Path, *, tail_bytes: int = 65536) -> SessionPeek:
    """Read only the header line and the last line(s), seeking from the end of the file."""
    path = Path(path)
    fd, _size = open_regular(path, SessionFileError, "session file")
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        first = fh.readline(MAX_SESSION_BYTES)
        header, problem = _parse_header(first.decode("utf-8", errors="replace")) if first else (None, "empty")
        start = max(len(first), st.st_size - tail_bytes)
        fh.seek(start)
        chunk = fh.read()
        # Grow the window until it holds at least one complete line before the end (huge events).
        while start > len(first) and chunk.count(b"\n") < 2:
            start = max(len(first), start - tail_bytes)
            fh.seek(start)
            chunk = fh.read()
    lines = chunk.split(b"\n")
    if start > len(first):
        lines = lines[1:]  # the first piece may be cut mid-line
    last: Event | None = None
    last_iteration = 0
    for raw in reversed(lines):
        if not raw.strip():
            continue
        version = header.format_version if header is not None else FORMAT_VERSION
        event, _err = _parse_event(raw.decode("utf-8", errors="replace"), 0, False, version)
        if event is not None:
            if last is None:
                last = event
            iteration = getattr(event, "iteration", None)
            if isinstance(iteration, int):
                last_iteration = iteration
                break
        elif last is None and problem is None:
            problem = "damaged last line"
    end = last if isinstance(last, SessionEnd) else None
    if end is not None:
        last_iteration = max(last_iteration, end.iterations)
    return SessionPeek(path, header, last, end, last_iteration, st.st_size, st.st_mtime, problem)


# ------------------------------------------------------------------------------------------------ follow


def follow(
    path: str | Path,
    *,
    stop: threading.Event | None = None,
    idle_timeout_s: float | None = None,
    poll_ms: int = 500,
    max_bytes: int = MAX_SESSION_BYTES,
) -> Iterator[SessionHeader | Event]:
    """Yield the header and every event of a session, then new events as lines are appended.

    Ends after a SessionEnd, when ``stop`` is set, or after ``idle_timeout_s`` without a new line. The
    file may not exist yet. A partial last line waits until its newline arrives. Bad lines end the
    iteration with a SessionFileError naming the line. Bounded as every reader is: a file that grows past
    ``max_bytes`` (a session file's 64 MiB), whole lines or one line without its newline, and a header line
    past MAX_HEADER_CHARS characters, end it with a SessionFileError saying so; at most ``max_bytes`` of the
    file are ever held, and only what is not yet a whole line.
    """
    import time

    import watchfiles

    path = Path(path)
    offset = 0
    buffer = b""
    number = 0
    version = FORMAT_VERSION
    last_activity = time.monotonic()

    def read_new() -> Iterator[SessionHeader | Event]:
        nonlocal offset, buffer, number, last_activity, version
        if not path.exists():
            return
        fd, _size = open_regular(path, SessionFileError, "session file")  # a FIFO is refused at once
        with os.fdopen(fd, "rb") as fh:
            fh.seek(offset)
            data = fh.read(max_bytes + 1 - offset)
        offset += len(data)
        over = offset > max_bytes
        if over:  # the lines whole within the bound are read; then the follow ends
            data = data[: len(data) - (offset - max_bytes)]
        buffer += data
        *complete, buffer = buffer.split(b"\n")
        if number == 0 and not complete and len(buffer) > MAX_HEADER_CHARS:
            chars = len(buffer.decode("utf-8", errors="replace"))
            if chars > MAX_HEADER_CHARS:
                raise SessionFileError(
                    f"{path}: the header line has more than the {MAX_HEADER_CHARS:,} characters a header "
                    "may have; stopped following it"
                )
        for raw in complete:
            number += 1
            last_activity = time.monotonic()
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            if number == 1:
                header, problem = _parse_header(line)
                if header is None:
                    raise SessionFileError(f"{path}: {problem}")
                version = header.format_version
                yield header
                continue
            event, problem = _parse_event(line, number, False, version)
            if event is None:
                raise SessionFileError(f"{path}: {problem}")
            yield event
        if over:
            raise SessionFileError(
                f"{path}: grew past the {max_bytes:,} bytes a session file may have; stopped following it"
            )

    def finished() -> bool:
        if stop is not None and stop.is_set():
            return True
        return idle_timeout_s is not None and time.monotonic() - last_activity > idle_timeout_s

    for item in read_new():
        yield item
        if isinstance(item, SessionEnd):
            return
    watch_dir = path.parent if path.parent.exists() else Path(".")
    for _changes in watchfiles.watch(
        watch_dir,
        stop_event=stop,
        rust_timeout=poll_ms,
        yield_on_timeout=True,
        debounce=50,
        step=20,
        recursive=False,
    ):
        for item in read_new():
            yield item
            if isinstance(item, SessionEnd):
                return
        if finished():
            return


def default_path(sessions_dir: str | Path, header: SessionHeader) -> Path:
    """sessions/<run id or 'live'>/<task>[-s<sample>]-<session id>.jsonl"""
    run = header.run_id or "live"
    sample = f"-s{header.sample}" if header.sample else ""
    safe_task = re.sub(r"[^A-Za-z0-9._-]+", "_", header.task.id)
    return Path(sessions_dir) / run / f"{safe_task}{sample}-{header.session_id}.jsonl"
