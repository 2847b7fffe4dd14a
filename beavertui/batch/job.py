"""One batch session: start it, or resume it from its file's valid prefix, and retry infrastructure failures.

A session file is the only record of progress, so resuming needs nothing else: a finished session is
skipped, a cut one continues at its first attempt without a verdict (run_session redoes that attempt),
and one ended by an infrastructure failure is rewound past that failure and retried up to the batch's
retry count. Every infrastructure failure is logged to the run's infra.jsonl before any retry, so it
is counted even when the retry succeeds. The same code serves the local and the Ray executor.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from beavertui.batch.protocol_file import ModelSpec
from beavertui.batch.rundir import log_infra, read_infra
from beavertui.engine.events import Event, InfraError, SessionEnd, SessionHeader
from beavertui.engine.protocol import Protocol
from beavertui.engine.session import SessionWriter, read_session


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


def _rewrite(path: Path, header: SessionHeader, events: list[Event]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".rewind-", suffix=".jsonl", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(header.model_dump_json() + "\n")
        for e in events:
            fh.write(e.model_dump_json() + "\n")
    os.replace(tmp, path)


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


def prepare(job: JobSpec, run_dir: Path, retries: int) -> Prefix | JobOutcome | None:
    """Where a session stands: None (start fresh), a prefix to resume from, or its final outcome."""
    path = job.path
    if not path.exists():
        return None
    header, events, _problem = read_session(path)
    if header is None:  # not even a header survived: start again
        path.unlink()
        return None
    if events and isinstance(events[-1], SessionEnd):
        if events[-1].stop_reason != "error" or retries_used(run_dir, path) >= retries:
            return _finished_outcome(events)
        kept = _rewind(events)
        log_infra(
            run_dir,
            {
                "session": str(path.relative_to(run_dir)),
                "detail": events[-1].detail or "infrastructure failure",
                "retried": True,
            },
        )
        _rewrite(path, header, kept)
        return header, kept
    return header, events


class Sink:
    """Writes a session's events as they arrive: a new file, or the continuation of a prefix."""

    def __init__(self, path: Path, prefix: Prefix | None, secrets: tuple[str, ...] = ()) -> None:
        self.path = path
        self.prefix = prefix
        self.secrets = secrets
        self.writer: SessionWriter | None = None
        if prefix is not None:
            self.writer, _ = SessionWriter.reopen(path, redact=secrets)
        self.end: SessionEnd | None = None
        self.infra: list[str] = []
        self.new_attempts = 0

    def take(self, item: SessionHeader | Event) -> None:
        if isinstance(item, SessionHeader):
            if self.writer is None:
                self.writer = SessionWriter(self.path, item, redact=self.secrets)
            return
        assert self.writer is not None
        self.writer.append(item)
        if isinstance(item, InfraError):
            self.infra.append(f"{item.source}: {item.detail}")
        elif isinstance(item, SessionEnd):
            self.end = item
        elif item.kind == "verdict":
            self.new_attempts += 1

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def drive(
    job: JobSpec,
    run_dir: Path,
    retries: int,
    start: Callable[[Prefix | None], tuple[Iterable[SessionHeader | Event], tuple[str, ...]]],
    on_event: Callable[[JobSpec, Event], None] | None = None,
) -> JobOutcome:
    """Run (or resume, or skip) one session; ``start(prefix)`` gives the event stream and the secrets."""
    resumed = False
    infra_all: list[str] = []
    while True:
        state = prepare(job, run_dir, retries)
        if isinstance(state, JobOutcome):
            state.resumed = resumed
            state.infra = infra_all
            return state
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
            detail = f"{type(exc).__name__}: {exc}"
            log_infra(
                run_dir, {"session": str(job.path.relative_to(run_dir)), "detail": detail, "retried": False}
            )
            return JobOutcome(status="failed", infra=[*infra_all, detail], resumed=resumed)
        finally:
            if sink is not None:
                sink.close()
        assert sink is not None
        infra_all += sink.infra
        end = sink.end
        if end is None:
            return JobOutcome(status="failed", infra=infra_all, resumed=resumed)
        if end.stop_reason == "error" and sink.infra and retries_used(run_dir, job.path) < retries:
            continue  # prepare() rewinds it and logs the retry
        if sink.infra:
            rel = str(job.path.relative_to(run_dir))
            for detail in sink.infra:
                log_infra(run_dir, {"session": rel, "detail": detail, "retried": False})
        return JobOutcome(
            status="ran",
            passed=end.success,
            attempts=end.iterations,
            stop_reason=end.stop_reason,
            infra=infra_all,
            resumed=resumed,
        )
