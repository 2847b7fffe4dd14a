"""A toolchain that replays recorded GPU outcomes, keyed by task, harness and candidate.

Tests and demos run the whole repair loop without a GPU: each candidate's recorded Built, Ran, Sanitized,
Timed and Verdict events are replayed under the new iteration number, with the verdict re-judged against
the new gate. A recorded outcome holds only for the task it was judged on (its harness decided whether
the candidate is correct, its reference gave the speedup), so it is found by the task id, the sha256 of
the task's harness and the sha256 of the normalised candidate, never by the candidate alone. Recordings
come from a JSON-Lines file (one ``{"task", "harness", "sha256" or "code", "events": [...]}`` object per
line) or from existing session files. ``RecordingToolchain`` wraps a real toolchain and writes such a
file. An unknown candidate is a ToolchainError, or, when asked, a clearly labelled build failure. This
module must not classify or time anything itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from beavertui.engine.code.hashing import code_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError, ToolchainError
from beavertui.engine.fileio import MAX_INPUT_BYTES, append_line, missing, read_small_text
from beavertui.engine.session.events import (
    EVENT_ADAPTER,
    Built,
    Candidate,
    Event,
    Flag,
    GpuSignature,
    Profiled,
    Ran,
    Sanitized,
    StageResult,
    Timed,
    Verdict,
    now,
)
from beavertui.engine.session.store import read_session, session_files
from beavertui.engine.toolchain.base import AttemptOptions, Toolchain, profiler_unavailable

Outcome = tuple[Event, ...]
#: (task id, harness sha256, candidate sha256). A key made in code may give the candidate's sha256 alone
#: (a plain str): it then holds for any task, which only tests that build their recordings by hand do.
Key = tuple[str, str, str]
_OUTCOME_KINDS = (Built, Ran, Sanitized, Timed, Profiled, Verdict)


def judge_gate(verdict: Verdict, gate: float) -> Verdict:
    """The verdict judged against another gate p (docs/metrics.md: success = correct and speedup >= p)."""
    success = verdict.correct and (gate == 0 or (verdict.speedup is not None and verdict.speedup >= gate))
    reason = verdict.reason
    if verdict.correct:
        reason = "passed" if success else "below gate"
    return verdict.model_copy(update={"gate": gate, "success": success, "reason": reason})


def _check_outcome(events: list[Event], where: str) -> Outcome:
    if not events or not isinstance(events[-1], Verdict):
        raise BeaverError(f"{where}: a recorded outcome must end with a verdict")
    bad = [e.kind for e in events if not isinstance(e, _OUTCOME_KINDS)]
    if bad:
        raise BeaverError(f"{where}: unexpected event kinds in a recorded outcome: {', '.join(bad)}")
    return tuple(events)


def load_recordings(path: str | Path, language: str = "cuda") -> dict[Key, Outcome]:
    """Read a recordings file (JSON Lines: ``task``, ``harness``, ``sha256`` or ``code``, and ``events``)."""
    path = Path(path)
    out: dict[Key, Outcome] = {}
    lines = read_small_text(path, MAX_INPUT_BYTES, "recordings file").splitlines()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            obj = json.loads(line)
            raw_events = obj["events"]
            events = [EVENT_ADAPTER.validate_python({"iteration": 1, **e}) for e in raw_events]
        except (json.JSONDecodeError, KeyError, TypeError, RecursionError) as exc:
            raise BeaverError(f"{where}: not a recording ({exc.__class__.__name__}: {exc})") from None
        except ValidationError as exc:
            raise BeaverError(f"{where}: invalid event: {exc.errors()[0]['msg']}") from None
        key = obj.get("sha256") or (
            code_hash(obj["code"], obj.get("language", language)) if "code" in obj else None
        )
        if not isinstance(key, str):
            raise BeaverError(f"{where}: needs 'sha256' or 'code'")
        task, harness = obj.get("task"), obj.get("harness")
        if not isinstance(task, str) or not isinstance(harness, str):
            raise BeaverError(
                f"{where}: needs 'task' and 'harness' (the task id and harness sha256 it was judged on)"
            )
        out[(task, harness, key)] = _check_outcome(events, where)
    return out


def recordings_from_sessions(paths: Iterable[str | Path]) -> tuple[dict[Key, Outcome], GpuSignature | None]:
    """Every judged candidate of the given session files (the valid prefix of damaged ones).

    A session that does not name its harness (written before the header held its hash) gives nothing:
    its outcomes cannot be told apart from those of another harness.
    """
    out: dict[Key, Outcome] = {}
    gpu: GpuSignature | None = None
    for path in paths:
        header, events, _problem = read_session(path)
        if header is None or not header.task.harness_hash:
            continue
        task, harness = header.task.id, header.task.harness_hash
        gpu = gpu or header.gpu
        keys: dict[int, str] = {}
        pending: dict[int, list[Event]] = {}
        for e in events:
            if isinstance(e, Candidate) and e.sha256 is not None and e.code is not None:
                keys[e.iteration] = e.sha256
                pending[e.iteration] = []
            elif isinstance(e, _OUTCOME_KINDS) and e.iteration in pending:
                pending[e.iteration].append(e)
                if isinstance(e, Verdict):
                    out[(task, harness, keys[e.iteration])] = tuple(pending.pop(e.iteration))
    return out, gpu


class RecordedToolchain:
    """Replays recorded outcomes; never builds or runs anything."""

    def __init__(
        self,
        recordings: Mapping[Key, Outcome] | Mapping[str, Outcome],
        *,
        unknown: Literal["error", "fail"] = "error",
        gpu: GpuSignature | None = None,
    ) -> None:
        self.recordings: dict[Key | str, Outcome] = dict(recordings.items())
        self.unknown = unknown
        self._gpu = gpu
        self.keys_seen: list[str] = []
        self._harness: dict[str, str | None] = {}
        self._tasks = {k[:2] for k in self.recordings if isinstance(k, tuple)}
        """(task id, harness sha256) of every recorded outcome."""
        self._any_task = any(isinstance(k, str) for k in self.recordings)
        """A key made of a candidate's hash alone, which holds for any task (tests' hand-made recordings)."""

    @classmethod
    def load(cls, spec: str | Path, *, unknown: Literal["error", "fail"] = "error") -> RecordedToolchain:
        """From a recordings file, a session file, or a folder of session files."""
        path = Path(spec)
        if path.is_dir():
            left: list[str] = []
            files = sorted(session_files(path, left_out=left))
            if left:  # a recording it cannot read would replay as unknown: refused, said, never skipped
                more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
                raise BeaverError(f"{path}: recordings folder not read whole: {left[0]}{more}")
            recs, gpu = recordings_from_sessions(files)
            return cls(recs, unknown=unknown, gpu=gpu)
        if not path.is_file():
            raise missing(path, "recordings file or session folder")
        first = read_small_text(path, MAX_INPUT_BYTES, "recordings file").split("\n", 1)[0]
        if '"kind":"header"' in first.replace(" ", ""):
            recs, gpu = recordings_from_sessions([path])
            return cls(recs, unknown=unknown, gpu=gpu)
        return cls(load_recordings(path), unknown=unknown)

    def gpu(self) -> GpuSignature | None:
        return self._gpu

    def _harness_of(self, task: Task) -> str | None:
        if task.id not in self._harness:
            self._harness[task.id] = task.harness_hash()
        return self._harness[task.id]

    def lookup(self, task: Task, code: str) -> Outcome | None:
        """The outcome recorded for this candidate on this task and harness, if any."""
        key = code_hash(code, task.language)
        harness = self._harness_of(task)
        found = self.recordings.get((task.id, harness, key)) if harness is not None else None
        return found if found is not None else self.recordings.get(key)

    def knows_task(self, task: Task) -> bool:
        """Whether an outcome of some candidate of this task, on its harness, is recorded (a key made of a
        candidate's hash alone holds for any task)."""
        return self._any_task or (task.id, self._harness_of(task)) in self._tasks

    def judges(self, task: Task, code: str) -> bool:
        """Whether an outcome of this candidate on this task is recorded (attempt() can judge it)."""
        return self.lookup(task, code) is not None

    def profiler_unavailable(self) -> str | None:
        """Recorded outcomes replay their recorded profiles; L4 feedback says when one has none."""
        return None

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        key = code_hash(code, task.language)
        self.keys_seen.append(key)
        outcome = self.lookup(task, code)
        if outcome is None:
            if self.unknown == "error":
                other = sorted({k[0] for k in self.recordings if isinstance(k, tuple) and k[2] == key})
                why = (
                    f" (recorded for {', '.join(other[:3])}, not for {task.id} with this harness)"
                    if other
                    else ""
                )
                raise ToolchainError(
                    f"no recorded outcome for this candidate on task {task.id} (sha256 {key[:12]}){why}; "
                    "record it on a GPU, or judge it a failed build (live: --unknown-candidates fail)"
                )
            yield from self._unrecorded(key, options)
            return
        defer = options.defer_timing and any(isinstance(e, Timed) for e in outcome)
        for e in outcome:
            if isinstance(e, Profiled) and not options.profile:
                continue  # recorded at L4, replayed at a level that sends no profile
            if isinstance(e, Timed) and defer:
                continue  # timed later (time_later), by a batch's timing lane
            e = e.model_copy(update={"iteration": options.iteration, "t": now()})
            if isinstance(e, Verdict):
                e = judge_gate(e, options.gate)
                if defer and e.correct:
                    update = {"speedup": None, "success": False, "reason": "timing pending"}
                    e = e.model_copy(update={**update, "timing_pending": True})
            yield e

    def time_later(self, task: Task, code: str, pending: Verdict, gate: float) -> Iterator[Event]:
        """The recorded timing of a candidate whose verdict was left ``timing_pending``, and its recorded
        verdict judged at ``gate``."""
        outcome = self.lookup(task, code)
        if outcome is None:
            raise ToolchainError(f"no recorded outcome to time for this candidate on task {task.id}")
        for e in outcome:
            if isinstance(e, Timed | Verdict):
                e = e.model_copy(update={"iteration": pending.iteration, "t": now()})
                yield judge_gate(e, gate) if isinstance(e, Verdict) else e

    def _unrecorded(self, key: str, options: AttemptOptions) -> Iterator[Event]:
        log = f"recorded toolchain: no recorded outcome for candidate sha256 {key[:12]}; nothing was built"
        yield Built(
            iteration=options.iteration,
            result=StageResult(stage="build", command="(recorded)", rc=1, log=log, log_bytes=len(log)),
        )
        yield Verdict(
            iteration=options.iteration,
            category="buildability",
            signature="unrecorded candidate",
            correct=False,
            gate=options.gate,
            reason="unrecorded candidate",
            decisive=[log],
            flags=[Flag(name="unrecorded")],
        )


class RecordingToolchain:
    """Runs a real toolchain and appends every judged candidate's outcome to a recordings file."""

    def __init__(self, inner: Toolchain, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def gpu(self) -> GpuSignature | None:
        return self.inner.gpu()

    def profiler_unavailable(self) -> str | None:
        return profiler_unavailable(self.inner)

    def attempt(self, task: Task, code: str, options: AttemptOptions) -> Iterator[Event]:
        events: list[Event] = []
        for e in self.inner.attempt(task, code, options):
            events.append(e)
            yield e
        if events and isinstance(events[-1], Verdict):
            line = {
                "sha256": code_hash(code, task.language),
                "task": task.id,
                "harness": task.harness_hash(),
                "events": [e.model_dump(mode="json", exclude={"iteration", "t"}) for e in events],
            }
            append_line(self.path, json.dumps(line))
