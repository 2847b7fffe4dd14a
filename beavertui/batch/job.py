"""One batch session: start it, or resume it from its file's valid prefix, and retry infrastructure failures.

A session file is the only record of progress, so resuming needs nothing else: a finished session is
skipped, a cut one continues at its first attempt without a verdict (run_session redoes that attempt),
and one ended by an infrastructure failure is rewound past that failure and retried up to the batch's
retry count over every resume of the run (a kill changes nothing); ``batch --resume --retry-infra``
gives it the retries anew, for a run whose endpoint or GPU has been fixed since. Every infrastructure failure is logged to the run's infra.jsonl before any retry, so it
is counted even when the retry succeeds. Each record names the event it stands for (``at``: the event's
time stamp), so a run killed between logging and rewriting logs nothing twice and spends no retry twice,
and the failures a finished session keeps are logged at the latest when the session is next looked at.
The same code serves the local and the Ray executor.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from beavertui.batch.gpu_pool import NO_GPU_LEFT
from beavertui.batch.protocol_file import ModelSpec
from beavertui.batch.rundir import INFRA_LOG, log_infra, read_infra, storage_error
from beavertui.engine.fileio import atomic_file
from beavertui.engine.session.events import Event, InfraError, SessionEnd, SessionHeader
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.state import fold
from beavertui.engine.session.store import SessionRecorder, SessionWriter, read_session


@dataclass(frozen=True)
class JobSpec:
    """What one session is (picklable: sent to Ray workers as is)."""

    run_id: str
    model: ModelSpec
    slug: str
    protocol: Protocol
    task_id: str
    sample: int
    path: Path
    reply_cache: str | None = None
    """Folder of the reply cache, if the run uses one."""
    reply_cache_sampled: bool = False
    """Reuse replies sampled at temperature > 0 too."""
    retry_infra: bool = False
    """A session that ended by an infrastructure failure gets the run's retries anew (``--retry-infra``)."""

    @property
    def group(self) -> tuple[str, str]:
        return (self.model.name, self.slug)


@dataclass
class JobOutcome:
    """How a session ended (or that it had ended before)."""

    status: Literal["ran", "skipped", "failed"]
    passed: bool = False
    attempts: int = 0
    stop_reason: str | None = None
    infra: list[str] = field(default_factory=list)
    resumed: bool = False


Prefix = tuple[SessionHeader, list[Event]]

log = logging.getLogger(__name__)


def _rewrite(path: Path, header: SessionHeader, events: list[Event]) -> None:
    # the temporary name does not end in .jsonl, so a run killed mid-rewrite leaves no second "session"
    with atomic_file(path) as fh:
        fh.write(header.model_dump_json() + "\n")
        for e in events:
            fh.write(e.model_dump_json() + "\n")


def _rewind(events: list[Event]) -> list[Event]:
    """Drop the end and the infrastructure failures that caused it, so the cut attempt is redone."""
    out = list(events)
    while out and isinstance(out[-1], SessionEnd | InfraError):
        out.pop()
    return out


def _finished_outcome(events: list[Event]) -> JobOutcome:
    end = events[-1]
    assert isinstance(end, SessionEnd)
    return JobOutcome(
        status="skipped", passed=end.success, attempts=end.iterations, stop_reason=end.stop_reason
    )


def retries_used(run_dir: Path, path: Path) -> int:
    rel = str(path.relative_to(run_dir))
    return sum(1 for r in read_infra(run_dir) if r.get("session") == rel and r.get("retried"))


def _log_kept_failures(run_dir: Path, rel: str, header: SessionHeader, events: list[Event]) -> None:
    """Log the infrastructure failures a finished session keeps (those of its attempts), each once."""
    if not any(isinstance(e, InfraError) for e in events):
        return
    kept = [e for a in fold(header, events).attempts for e in a.infra_errors]
    if not kept:
        return
    logged = {r.get("at") for r in read_infra(run_dir) if r.get("session") == rel and not r.get("retried")}
    for e in kept:
        if e.t not in logged:
            detail = f"{e.source}: {e.detail}"
            log_infra(run_dir, {"session": rel, "detail": detail, "retried": False, "at": e.t})


def _end_last_line(path: Path) -> None:
    """A finished session whose last line lost only its newline (a write cut one byte short) gets it."""
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            fh.write(b"\n")


def set_aside(path: Path, run_dir: Path, why: str) -> Path:
    """Rename a session file that cannot be resumed to ``NAME.set-aside-N`` (no longer a session of the
    run, never deleted), and say so: on stderr and in infra.jsonl."""
    n = 1
    while (target := path.with_name(f"{path.name}.set-aside-{n}")).exists():
        n += 1
    os.replace(path, target)
    rel = str(path.relative_to(run_dir))
    detail = f"set aside as {target.name}: {why}"
    log_infra(run_dir, {"session": rel, "detail": detail, "retried": False, "set_aside": target.name})
    log.warning("beavertui: %s: %s", rel, detail)
    return target


def times_set_aside(run_dir: Path, rel: str) -> int:
    return sum(1 for r in read_infra(run_dir) if r.get("session") == rel and r.get("set_aside"))


def _disagrees(job: JobSpec, header: SessionHeader) -> str | None:
    """Why a session file's header is not of the session its path stands for (None when it is)."""
    if header.task.id != job.task_id:
        return f"its header names task {header.task.id!r}, its path task {job.task_id!r}"
    if header.sample != job.sample:
        return f"its header names sample {header.sample}, its path sample {job.sample}"
    if header.run_id is not None and header.run_id != job.run_id:
        return f"its header names run {header.run_id!r}, not {job.run_id!r}"
    return None


def prepare(job: JobSpec, run_dir: Path, retries: int, spent: int = 0) -> Prefix | JobOutcome | None:
    """Where a session stands: None (start fresh), a prefix to resume from, or its final outcome.

    A session that an infrastructure failure ended is retried while fewer than ``retries`` retries of it are
    logged beyond the ``spent`` ones (0, or with ``--retry-infra`` those logged before this run of the batch).

    A file that cannot be resumed (no readable header: damaged, a newer format, a header over the bound; or
    a header of another session than its path says) is set aside, never deleted, and the session starts
    again, at most ``retries`` + 1 times over every resume of the run: a session whose every file is
    unreadable (a defect that writes it so) is then a failure, not retried forever."""
    path = job.path
    rel = str(path.relative_to(run_dir))
    if not path.exists():
        if (n := times_set_aside(run_dir, rel)) > retries:
            return JobOutcome(
                status="failed",
                stop_reason="error",
                infra=[f"{rel}: not run again: its file was set aside {n} time(s) (see {INFRA_LOG})"],
            )
        return None
    header, events, problem = read_session(path)
    if header is None and problem in ("truncated header line", "empty file"):
        path.unlink()  # a kill cut the header's write: not one line was recorded, nothing is lost
        return None
    why = f"unreadable: {problem}" if header is None else _disagrees(job, header)
    if why is not None:
        set_aside(path, run_dir, why)
        return prepare(job, run_dir, retries, spent)
    assert header is not None
    ends = [i for i, e in enumerate(events) if isinstance(e, SessionEnd)]
    if ends and ends[-1] < len(events) - 1:
        # a timing lane's append cut by a kill after the loop's end: back to the last whole end, and the
        # lane times that attempt again (engine/session/late.py)
        events = events[: ends[-1] + 1]
        _rewrite(path, header, events)
    if events and isinstance(events[-1], SessionEnd):
        end = events[-1]
        rel = str(path.relative_to(run_dir))
        if end.stop_reason == "error":
            records = [r for r in read_infra(run_dir) if r.get("session") == rel and r.get("retried")]
            this = any(r.get("at") == end.t for r in records)  # logged, then killed before the rewrite
            used = len(records) - spent
            if this and used > 0:
                used -= 1  # its retry was logged, then a kill came before the rewrite: not spent yet
            if used < retries:
                if not this:
                    detail = end.detail or "infrastructure failure"
                    log_infra(run_dir, {"session": rel, "detail": detail, "retried": True, "at": end.t})
                kept = _rewind(events)
                _rewrite(path, header, kept)
                return header, kept
        _log_kept_failures(run_dir, rel, header, events)
        _end_last_line(path)
        return _finished_outcome(events)
    return header, events


class Sink:
    """Writes a session's events as they arrive: a new file, or the continuation of a prefix."""

    def __init__(self, path: Path, prefix: Prefix | None, secrets: tuple[str, ...] = ()) -> None:
        self.prefix = prefix
        writer = SessionWriter.reopen(path, redact=secrets)[0] if prefix is not None else None
        self.recorder = SessionRecorder(path, redact=secrets, writer=writer)
        self.end: SessionEnd | None = None
        self.infra: list[str] = []
        self.new_attempts = 0

    def take(self, item: SessionHeader | Event) -> None:
        self.recorder.take(item)
        if isinstance(item, SessionHeader):
            return
        if isinstance(item, InfraError):
            self.infra.append(f"{item.source}: {item.detail}")
        elif isinstance(item, SessionEnd):
            self.end = item
        elif item.kind == "verdict":
            self.new_attempts += 1

    def close(self) -> None:
        self.recorder.close()


def drive(
    job: JobSpec,
    run_dir: Path,
    retries: int,
    start: Callable[[Prefix | None], tuple[Iterable[SessionHeader | Event], tuple[str, ...]]],
    on_event: Callable[[JobSpec, Event], None] | None = None,
) -> JobOutcome:
    """Run (or resume, or skip) one session; ``start(prefix)`` gives the event stream and the secrets."""
    resumed = False
    ran = False
    infra_all: list[str] = []
    runs = 0
    spent = retries_used(run_dir, job.path) if job.retry_infra else 0  # --retry-infra: retries anew
    while True:
        # after a run too: prepare() logs the failures of its end once, and rewinds it for a retry
        state = prepare(job, run_dir, retries, spent)
        if isinstance(state, JobOutcome):
            if ran and state.status != "failed":
                state.status = "ran"
            state.resumed = resumed
            state.infra = infra_all + state.infra
            return state
        if runs > retries:  # every run ends the same way and prepare() keeps asking for another: stop
            detail = f"stopped after {runs} runs of this session in one batch (each ended the same way)"
            log_infra(
                run_dir, {"session": str(job.path.relative_to(run_dir)), "detail": detail, "retried": False}
            )
            return JobOutcome(status="failed", infra=[*infra_all, detail], resumed=resumed)
        runs += 1
        resumed = resumed or state is not None
        sink: Sink | None = None
        try:
            stream, secrets = start(state)
            sink = Sink(job.path, state, secrets)
            for item in stream:
                sink.take(item)
                if on_event is not None and not isinstance(item, SessionHeader):
                    on_event(job, item)
        except Exception as exc:  # a defect or a failure to start: recorded, the batch goes on
            err = storage_error(exc) if isinstance(exc, OSError) else None
            if err is not None:  # a full disk or an unwritable folder: the whole batch stops
                raise err from None
            detail = f"{type(exc).__name__}: {exc}"
            log_infra(
                run_dir, {"session": str(job.path.relative_to(run_dir)), "detail": detail, "retried": False}
            )
            return JobOutcome(status="failed", infra=[*infra_all, detail], resumed=resumed)
        finally:
            if sink is not None:
                with contextlib.suppress(OSError):  # a failed write already said what is wrong
                    sink.close()
        assert sink is not None
        infra_all += sink.infra
        if sink.end is None:
            return JobOutcome(status="failed", infra=infra_all, resumed=resumed)
        if sink.end.stop_reason == "error" and any(NO_GPU_LEFT in d for d in sink.infra):
            # not a failure of this session: it waits, resumable, for a GPU (no retry spent)
            header, events, _problem = read_session(job.path)
            if header is not None:
                _rewrite(job.path, header, _rewind(events))
            return JobOutcome(status="failed", infra=infra_all, resumed=resumed, stop_reason="no_gpu")
        ran = True
