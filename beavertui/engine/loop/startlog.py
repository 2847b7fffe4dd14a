"""The broken start's log from a fresh check, kept per machine so that it is made once.

A task that ships no error log (every instance of the CUDABeaver release) gets one from a check of its
broken start before the first turn. The check depends only on the broken start, the task's harness, the
GPU and toolkit, and the protocol's gate and sanitizer setting, so a batch of many models, protocols and
samples over one task would otherwise build and run the same code once per session (and a broken start
that hangs holds its GPU for the whole time limit each time). The log is stored under the cache, keyed by
all of those, and read back by later sessions, whose first turn is then the same as the first session's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from beavertui import __version__
from beavertui.engine.corpus import families
from beavertui.engine.corpus.harness import harness_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.fileio import parse_json, write_atomic
from beavertui.engine.session.events import EVENT_ADAPTER, Event, GpuSignature

#: Stored logs larger than this are not kept (the prompt shows an excerpt of the log anyway).
MAX_BYTES = 1 << 20


def key(task: Task, gpu: GpuSignature, gate: float, sanitize_on_failure: bool) -> str:
    """What the check's log depends on, hashed."""
    parts = {
        "task": task.id,
        "broken": hashlib.sha256(task.broken_start().encode()).hexdigest(),
        "harness": harness_hash(task),
        "gpu": gpu.slug,
        "driver": gpu.driver,
        "gate": gate,
        "sanitize_on_failure": sanitize_on_failure,
        "version": __version__,
    }
    scope = families.sanitizer_scope_rule(task)
    if scope is not None:  # what the check's sanitizer run covered (kernelbench: the candidate's kernels)
        parts["sanitizer_scope"] = scope
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _path(cache: Path, gpu: GpuSignature, task: Task, digest: str) -> Path:
    return cache / "startlogs" / gpu.slug / f"{task.id[:80]}-{digest}.json"


@dataclass(frozen=True)
class Stored:
    """A stored check: its log, and how long its correctness run took (seconds; None: no run in it, or a
    check kept before its file said what it cost); ``events``: the check's own stage events and verdict, as
    the toolchain gave them (empty for a check kept before its file held them), and ``made`` (epoch seconds)
    when it was stored."""

    log: str
    run_s: float | None = None
    events: tuple[Event, ...] = ()
    made: float | None = None


def load(cache: Path, task: Task, gpu: GpuSignature, digest: str) -> Stored | None:
    """The stored check, or None."""
    try:
        doc = parse_json(_path(cache, gpu, task, digest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != digest or not isinstance(doc.get("log"), str):
        return None
    stages = doc.get("stages")
    runs = [
        float(st["duration_s"])
        for st in (stages if isinstance(stages, list) else [])
        if isinstance(st, dict) and st.get("stage") == "run" and isinstance(st.get("duration_s"), int | float)
    ]
    events: tuple[Event, ...] = ()
    raw = doc.get("events")
    if isinstance(raw, list):
        try:
            events = tuple(EVENT_ADAPTER.validate_python(e) for e in raw)
        except ValueError:  # written by another version: the log is still good, the events are not used
            events = ()
    made = doc.get("made")
    return Stored(
        str(doc["log"]),
        runs[0] if runs else None,
        events,
        float(made) if isinstance(made, int | float) else None,
    )


def _in_flight_path(cache: Path, gpu: GpuSignature, task: Task, digest: str) -> Path:
    p = _path(cache, gpu, task, digest)
    return p.with_name(f"{p.stem}.inflight.json")


def in_flight(
    cache: Path, task: Task, gpu: GpuSignature, digest: str, began: float, stages: list[dict[str, object]]
) -> None:
    """Note a check under way, with the stages it has finished so far (best effort, like ``save``). A check
    cut by the end of its process is never kept, so this note is what says what it had cost by then
    (bench/batch_timeline.py --startlogs); ``done`` removes it when the check ends in any other way."""
    p = _in_flight_path(cache, gpu, task, digest)
    doc = {"key": digest, "task": task.id, "began": began, "updated": time.time(), "stages": stages}
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(p, json.dumps({**doc, "in_flight": True}), durable=False)  # a note, replaced often
    except OSError:
        pass


def done(cache: Path, task: Task, gpu: GpuSignature, digest: str) -> None:
    """The check ended (kept or not): its in-flight note goes."""
    with contextlib.suppress(OSError):
        _in_flight_path(cache, gpu, task, digest).unlink(missing_ok=True)


def save(
    cache: Path, task: Task, gpu: GpuSignature, digest: str, log: str,
    began: float | None = None, stages: list[dict[str, object]] | None = None,
    events: Sequence[Event] = (),
) -> None:  # fmt: skip
    """Store a check's log (atomically; a failure to store costs only the reuse). ``began`` (epoch seconds)
    and ``stages`` (each stage's kind, duration and exit status) say what the check cost: the check is not
    an attempt, so the session files hold none of it (bench/batch_timeline.py --startlogs reads them).
    ``events``: the check's stage events and verdict, which judge an attempt whose candidate is the broken
    start itself (loop/run.py)."""
    if len(log.encode()) > MAX_BYTES:
        return
    p = _path(cache, gpu, task, digest)
    doc: dict[str, object] = {"key": digest, "task": task.id, "made": time.time(), "log": log}
    if began is not None:
        doc["began"] = began
    if stages is not None:
        doc["stages"] = stages
    if events:
        doc["events"] = [e.model_dump(mode="json") for e in events]
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(p, json.dumps(doc))
    except OSError:
        pass
