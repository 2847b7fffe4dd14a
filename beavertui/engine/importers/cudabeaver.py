"""A CUDABeaver harness run directory -> one beavertui session per (task, trajectory).

The harness (``python -m harness.run_experiment``) writes, per run, ``config.yaml`` (a copy of its config:
the model and the sampling settings live only there and in ``summary.json``), ``index/manifest.jsonl``
(one record per attempt), ``error_code/<sha256[:16]>.cu`` (each extracted candidate),
``build_log_raw/<task>__iter_NNNN.txt`` (``BUILD_OK=<bool>``, then the build output and, when a test
ran, the test output) and ``summary.json`` (its own aggregate numbers). Optionally
``api_responses/<task>__iter_NNNN.txt`` holds the model's raw replies.

What those records support becomes events: a Candidate with the stored code, a Built and a Ran with
the raw build and test output, a Timed where the record carries a full measurement, a Verdict with the
recorded category, correctness and speedup, a Stalled where the harness stopped on a stagnation
detector, and a SessionEnd with its stop reason. An ``api_error`` record becomes an InfraError (an
endpoint failure: never scored, as the release's own analysis drops such records). The records keep no
messages, time stamps, exit statuses, durations, commands, token counts or GPU: those fields are null or
absent and the header's ``imported`` block says so. This module reads files and builds events only.

Bounded as a run here is: each file of the run is read as a regular file of at most 64 MiB; a build or
test output is kept as a stage's log (its first and last 64 KiB, ``log_bytes`` the whole), a reply up to
MAX_REPLY_CHARS, a stored candidate longer than that not at all (``no_code_reason``, listed in
``dropped``), a record's text fields up to FIELD_CHARS, and a record of an iteration above MAX_BUDGET is
not scored.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beavertui import __version__
from beavertui.engine.code.diff import unified
from beavertui.engine.code.hashing import code_hash
from beavertui.engine.corpus import families
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.fileio import MAX_INPUT_BYTES, inside, read_capped
from beavertui.engine.host.sandbox import Limits, bounded_text
from beavertui.engine.importers.harness_run import HarnessRun, find_corpus, model_of, protocol_of
from beavertui.engine.judge.categories import NATIVE_LABELS, RELEASE_LABELS
from beavertui.engine.session.events import (
    MAX_REPLY_CHARS,
    Built,
    Candidate,
    Event,
    ImportedFrom,
    InfraError,
    ModelInfo,
    Ran,
    Reply,
    SessionEnd,
    SessionHeader,
    StageResult,
    Stalled,
    TaskRef,
    Timed,
    TimingResult,
    Verdict,
)
from beavertui.engine.session.protocol import DETECTORS, MAX_BUDGET, Protocol

SOURCE = "CUDABeaver harness"

#: The harness's eight-way categories -> categories.md. The two perf ones are correct attempts.
CATEGORY_MAP: dict[str, str] = {
    "buildability_bug": "buildability",
    "environment_dependency_bug": "environment_dependency",
    "integration_bug": "integration",
    "out_of_memory": "out_of_memory",
    "illegal_memory_access": "illegal_memory_access",
    "timeout": "timeout",
    "functional_correctness_bug": "functional_correctness",
    "perf_below_threshold": "passed",
    "perf_unmeasured": "passed",
    "passed": "passed",
}

#: Five-way labels found in ``category`` when the harness had no finer one (it then copies five_category).
FIVE_WAY_MAP: dict[str, str] = {
    "compile_error": "buildability",
    "memory_crash": "illegal_memory_access",
    "timeout": "timeout",
    "logic_error": "functional_correctness",
    "passed": "passed",
}

#: The harness's stop reasons -> SessionEnd.stop_reason.
STOP_MAP: dict[str, str] = {
    "passed": "passed",
    "max_iterations": "budget",
    "api_error": "error",
    "duplicate_code": "duplicate_code",
    "code_cycle": "code_cycle",
    "category_oscillation": "category_oscillation",
    "no_progress": "no_progress",
}

#: What no harness record holds, for every imported session.
NOT_RECORDED: tuple[str, ...] = (
    "the messages sent to the model (no request events)",
    "token counts and latencies of the model calls",
    "time stamps of attempts (every event time is null)",
    "the exit status, duration and command of each build and test (null in each stage result)",
    "the GPU, driver and toolkit the run used",
    "error signatures (the harness keeps a category and a detail line; Verdict.signature is null)",
    "timing samples (only the harness's summary of a measurement, where it made one)",
)

_API_ERROR_REASON = (
    "api_error (an endpoint failure: kept in its session as an infrastructure error, not scored)"
)
_STAGE_UNRECORDED = ["rc", "duration_s", "command"]

#: Bytes of a build or test output kept at its head and again at its tail, as a stage's log of a run here.
LOG_BYTES = Limits().output_bytes
#: The longest recorded text of one field of a record (a category, a detail line) kept in a session.
FIELD_CHARS = 300


@dataclass
class ImportCounts:
    """What an import did, for the command's summary and run.json."""

    records: int = 0
    """Manifest records read."""
    scored: int = 0
    """Records that became scored attempts (a Verdict)."""
    sessions: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    """Records not scored, by reason."""
    missing_files: list[str] = field(default_factory=list)
    """Files a record names that the run directory lacks."""
    corpus: str | None = None
    """The corpus the task texts came from, if any."""
    tasks_without_corpus: list[str] = field(default_factory=list)
    """Tasks whose broken start and reference are not in their sessions (not found in a corpus)."""


@dataclass(frozen=True)
class ImportedSession:
    """One session: the header and its events, in file order."""

    task_id: str
    header: SessionHeader
    events: list[Event]


def _task_parts(task_id: str) -> tuple[str, str]:
    """(family, label) from a release instance id ``<base>__<label>__<hash>``; ('', '') if not of that form."""
    parts = task_id.split("__")
    if len(parts) < 3:
        return "", ""
    label = parts[-2]
    if label not in RELEASE_LABELS and label not in NATIVE_LABELS:
        label = ""
    return parts[0].split("_")[0], label


def _corpus_tasks(corpus: Path | None, task_ids: list[str]) -> tuple[dict[str, TaskRef], str | None]:
    if corpus is None:
        return {}, None
    loaded = load_corpus(corpus, only=task_ids)
    return {t.id: t.ref() for t in loaded.tasks}, str(loaded.root)


# ----------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class _Logs:
    build_ok: bool | None
    build: str | None
    test: str | None
    api_error: str | None


def _read_text(path: Path, what: str) -> str:
    """A per-attempt file of the run: regular, at most 64 MiB (a BeaverError in one line otherwise)."""
    return read_capped(path, MAX_INPUT_BYTES, what).decode("utf-8", errors="replace")


def _read_log(path: Path) -> _Logs | None:
    if not path.exists():
        return None
    text = _read_text(path, "build log")
    first, _, rest = text.partition("\n")
    ok = {"BUILD_OK=True": True, "BUILD_OK=False": False}.get(first.strip())
    rest = rest.lstrip("\n")
    if rest.startswith("[API ERROR]"):
        return _Logs(ok, None, None, rest[len("[API ERROR]") :].strip("\n"))
    build: str | None = None
    test: str | None = None
    if rest.startswith("[BUILD OUTPUT]"):
        body = rest[len("[BUILD OUTPUT]") :].removeprefix("\n")
        build, sep, after = body.partition("\n\n[TEST OUTPUT]\n")
        test = after if sep else None
    return _Logs(ok, build, test, None)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _category(record: Mapping[str, Any]) -> tuple[str | None, str]:
    """(categories.md name or None when unknown, the harness's own name)."""
    raw = record.get("category") or record.get("five_category")
    name = str(raw) if raw is not None else ""
    if name in CATEGORY_MAP:
        return CATEGORY_MAP[name], name
    if name in FIVE_WAY_MAP:
        return FIVE_WAY_MAP[name], name
    return None, name


def _timing(perf: Mapping[str, Any]) -> TimingResult | None:
    """A Timed result only where the record holds a whole measurement (both medians and both spreads)."""
    cand, ref, speed = (
        _number(perf.get(k)) for k in ("candidate_runtime_ms", "reference_runtime_ms", "speedup")
    )
    cand_cv = _number(perf.get("candidate_cv"))
    ref_sd = _number(perf.get("reference_stddev_ms"))
    if cand is None or ref is None or speed is None or cand_cv is None or ref_sd is None or ref <= 0:
        return None
    method = str(perf.get("timing_method") or "harness")
    trials = perf.get("n_trials")
    return TimingResult(
        method=method,
        candidate_ms=cand,
        reference_ms=ref,
        candidate_cv=cand_cv,
        reference_cv=ref_sd / ref,
        speedup=speed,
        note=(
            f"measured by the {SOURCE} ({method}, {trials} trials); its samples are not recorded; "
            "the reference cv is its recorded stddev / runtime"
        ),
    )


def _detail_lines(record: Mapping[str, Any]) -> list[str]:
    detail = record.get("logic_error_detail")
    if not isinstance(detail, str):
        return []
    return [ln[:FIELD_CHARS] for ln in detail.splitlines() if ln.strip()][:8]


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no detail recorded"


# --------------------------------------------------------------------------------------------- sessions


def import_sessions(
    run: HarnessRun, corpus: Path | None = None, counts: ImportCounts | None = None
) -> Iterator[ImportedSession]:
    """One session per task of the run (the harness makes one trajectory per task and run), in the
    order the manifest first names each task. ``corpus``: where the tasks' broken starts and
    references are read from (else the release around the run directory, when there is one)."""
    counts = counts if counts is not None else ImportCounts()
    protocol, settings_notes = protocol_of(run.config)
    model = model_of(run.config)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in run.records:
        counts.records += 1
        task_id = r.get("task_id")
        iteration = r.get("iteration")
        if not isinstance(task_id, str) or not task_id:
            counts.dropped["no task_id"] += 1
            continue
        if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 1:
            counts.dropped["no iteration of 1 or more"] += 1
            continue
        if iteration > MAX_BUDGET:
            counts.dropped[f"an iteration above {MAX_BUDGET} (the largest budget a protocol has)"] += 1
            continue
        by_task.setdefault(task_id, []).append(r)
    corpus = corpus if corpus is not None else find_corpus(run)
    refs, counts.corpus = _corpus_tasks(corpus, list(by_task))
    for task_id, records in by_task.items():
        yield _session(run, task_id, records, protocol, model, settings_notes, refs.get(task_id), counts)
        counts.sessions += 1


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class _SessionBuilder:
    """Turns one task's records into its events, collecting what was dropped, derived or missing."""

    def __init__(
        self,
        run: HarnessRun,
        task_id: str,
        protocol: Protocol,
        settings_notes: list[str],
        ref: TaskRef | None,
        counts: ImportCounts,
    ) -> None:
        self.run = run
        self.task_id = task_id
        self.protocol = protocol
        self.counts = counts
        self.dropped: list[str] = []
        self.not_recorded = list(NOT_RECORDED)
        self.derived = [
            *settings_notes,
            f"categories: the harness's eight-way category mapped to categories.md (the {SOURCE}'s "
            "name kept in each verdict's reason); perf_below_threshold and perf_unmeasured are correct attempts",
            "candidate sha256 and diff: computed from the stored code",
        ]
        self.ref = ref if ref is not None else self._ref_from_id()
        self.replies = run.root / "api_responses"
        if self.replies.is_dir():
            self.derived.append("replies: the raw model replies the harness saved in api_responses/")
        else:
            self.not_recorded.append(
                "the model's replies (the run kept no api_responses/; only the extracted code)"
            )
        self.events: list[Event] = []
        self.sample_ids: list[str] = []
        self.previous: str | None = None
        self.speeds: list[float] = []
        self.passed = False
        self.last_iteration = 0
        self.infra_detail: str | None = None

    def _ref_from_id(self) -> TaskRef:
        family, label = _task_parts(self.task_id)
        self.counts.tasks_without_corpus.append(self.task_id)
        self.not_recorded.append(
            "the task's broken start, reference and solution file (no corpus holds this task; "
            "import with --corpus RELEASE to include them)"
        )
        self.derived.append("family and label: read from the task id")
        language = families.family_for("release", family, None).language if family else "cuda"
        if language == "python":
            self.derived.append(f"language python: {family} tasks are PyTorch extensions")
        return TaskRef(
            id=self.task_id,
            family=family or "unknown",
            label=label or "unknown",
            corpus="",
            layout="release",
            solution_file="",
            language=language,
            broken_start="",
            reference=None,
        )

    def one_per_iteration(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A resumed harness run may repeat an iteration's record; the later one is kept."""
        latest: dict[int, dict[str, Any]] = {}
        for r in records:
            it = int(r["iteration"])
            if it in latest:
                self.counts.dropped["a repeated record of one iteration (the later one kept)"] += 1
                earlier = latest[it].get("sample_id", it)
                self.dropped.append(f"{earlier}: repeated by a later record of iteration {it}")
            latest[it] = r
        return [latest[i] for i in sorted(latest)]

    def attempt(self, r: dict[str, Any]) -> None:
        """The events of one record."""
        it = int(r["iteration"])
        sample_id = str(r.get("sample_id") or f"{self.task_id}__iter_{it:04d}")
        paths = _mapping(r.get("paths"))
        log_rel = str(paths.get("build_log_raw") or f"build_log_raw/{sample_id}.txt")
        log_path = inside(self.run.root, log_rel)
        logs = _read_log(log_path) if log_path is not None else None
        if r.get("error_type") == "api_error":
            self.counts.dropped[_API_ERROR_REASON] += 1
            detail = _last_line(logs.api_error) if logs is not None and logs.api_error else "no log recorded"
            self.infra_detail = f"api_error: {detail}"
            self.events.append(InfraError(t=None, iteration=it, source="endpoint", detail=self.infra_detail))
            self.dropped.append(f"{sample_id}: {_API_ERROR_REASON}")
            self.sample_ids.append(sample_id)
            self.last_iteration = it
            return
        category, raw_category = _category(r)
        if category is None:
            why = f"unknown category {raw_category[:FIELD_CHARS]!r}" if raw_category else "no category"
            self.counts.dropped[why] += 1
            self.dropped.append(f"{sample_id}: {why} (left out)")
            return
        self.sample_ids.append(sample_id)
        self.last_iteration = it
        self._reply(it, sample_id)
        self._candidate(it, paths.get("error_code"))
        correct = r.get("status") == "passed" or raw_category in ("perf_below_threshold", "perf_unmeasured")
        if logs is None:
            self.counts.missing_files.append(log_rel)
            self.not_recorded.append(f"the build and test output of iteration {it} ({log_rel} is missing)")
        else:
            build_ok = logs.build_ok if logs.build_ok is not None else r.get("build_ok")
            if logs.build is not None:
                self.events.append(Built(t=None, iteration=it, result=_stage("build", logs.build, build_ok)))
            if logs.test is not None:
                self.events.append(Ran(t=None, iteration=it, result=_stage("run", logs.test, correct)))
        perf = _mapping(r.get("performance"))
        timing = _timing(perf) if perf else None
        if timing is not None:
            self.events.append(Timed(t=None, iteration=it, result=timing))
        speedup = _number(perf.get("speedup")) if correct else None
        success = r.get("status") == "passed"
        self.passed = self.passed or success
        if correct and speedup is not None:
            self.speeds.append(speedup)
        reason = f"harness: {raw_category}"
        extra = [
            str(r[k])[:FIELD_CHARS]
            for k in ("five_category", "error_type")
            if r.get(k) and r.get(k) != raw_category
        ]
        if extra:
            reason += f" ({', '.join(extra)})"
        if perf.get("skipped"):
            reason += f"; speedup not measured: {str(perf['skipped'])[:FIELD_CHARS]}"
        self.events.append(
            Verdict(
                t=None,
                iteration=it,
                category=category,
                signature=None,
                correct=correct,
                speedup=speedup,
                gate=self.protocol.gate,
                success=success,
                reason=reason,
                decisive=_detail_lines(r),
            )
        )
        self.counts.scored += 1

    def _reply(self, it: int, sample_id: str) -> None:
        if not self.replies.is_dir():
            return
        path = inside(self.run.root, f"api_responses/{sample_id}.txt")
        if path is not None and path.exists():
            text = _read_text(path, "saved reply")
            self.events.append(
                Reply(
                    t=None,
                    iteration=it,
                    content=text[:MAX_REPLY_CHARS],
                    truncated_chars=max(0, len(text) - MAX_REPLY_CHARS),
                    latency_s=None,
                )
            )

    def _candidate(self, it: int, rel: object) -> None:
        path = inside(self.run.root, rel)
        code: str | None = None
        no_code = None
        if path is None:
            no_code = "the record names no stored code"
        elif not path.exists():
            no_code = f"the run directory has no {rel}"
            self.counts.missing_files.append(str(rel))
        else:
            code = _read_text(path, "stored candidate")
            if len(code) > MAX_REPLY_CHARS:  # no reply a session keeps could hold it
                no_code = (
                    f"{rel} has {len(code):,} characters, more than the {MAX_REPLY_CHARS:,} a reply "
                    "(and so a candidate) keeps: not imported"
                )
                self.dropped.append(f"iteration {it}: {no_code}")
                code = None
        repeated = self.protocol.method == "repeated"
        before = self.previous if self.previous is not None and not repeated else self.ref.broken_start
        name = self.ref.solution_file or "solution"
        self.events.append(
            Candidate(
                t=None,
                iteration=it,
                code=code,
                sha256=code_hash(code, self.ref.language) if code is not None else None,
                no_code_reason=no_code,
                diff=unified(before, code, name) if code is not None and before else "",
            )
        )
        if code is not None:
            self.previous = code

    def end(self, last: Mapping[str, Any], iterations: int) -> None:
        """The Stalled (when the harness stopped on a detector) and the SessionEnd."""
        raw_stop = last.get("stop_reason")
        stop = STOP_MAP.get(str(raw_stop)) if raw_stop is not None else None
        if stop is None:
            if self.passed and self.protocol.method == "iterative":
                stop = "passed"
            elif last.get("error_type") == "api_error":
                stop = "error"
            else:
                stop = "budget"
            said = f"{raw_stop!r}, not a stop reason beavertui knows" if raw_stop is not None else "missing"
            self.derived.append(f"stop reason {stop}: the last record's stop_reason is {said}")
        if stop in DETECTORS:
            detail = f"the {SOURCE} stopped on {raw_stop}"
            self.events.append(Stalled(t=None, iteration=self.last_iteration, detector=stop, detail=detail))
        self.events.append(
            SessionEnd(
                t=None,
                stop_reason=stop,
                iterations=iterations,
                success=self.passed,
                best_speedup=max(self.speeds) if self.speeds else None,
                detail=(self.infra_detail or f"the {SOURCE} recorded an api_error")
                if stop == "error"
                else None,
            )
        )

    def header(self, model: ModelInfo) -> SessionHeader:
        run = self.run
        experiment = run.config["experiment"].get("name")
        return SessionHeader(
            t=None,
            session_id=hashlib.sha256(f"{run.run_id}/{self.task_id}".encode()).hexdigest()[:12],
            tool_version=__version__,
            task=self.ref,
            model=model,
            protocol=self.protocol,
            gpu=None,
            run_id=run.run_id,
            sample=0,
            notes=(
                f"Imported from the {SOURCE} run {run.run_id}"
                + (f" (experiment {experiment})" if experiment else "")
                + ": what the harness did not record (messages, time stamps, exit statuses, durations, "
                "commands, tokens) is null here, never filled in."
            ),
            imported=ImportedFrom(
                source=SOURCE,
                run_dir=str(run.root.resolve()),
                run_id=run.run_id,
                experiment=str(experiment) if experiment else None,
                records=self.sample_ids,
                not_recorded=self.not_recorded,
                derived=self.derived,
                dropped=self.dropped,
            ),
        )


def _session(
    run: HarnessRun,
    task_id: str,
    records: list[dict[str, Any]],
    protocol: Protocol,
    model: ModelInfo,
    settings_notes: list[str],
    ref: TaskRef | None,
    counts: ImportCounts,
) -> ImportedSession:
    b = _SessionBuilder(run, task_id, protocol, settings_notes, ref, counts)
    ordered = b.one_per_iteration(records)
    for r in ordered:
        b.attempt(r)
    b.end(ordered[-1], len(ordered))
    return ImportedSession(task_id=task_id, header=b.header(model), events=b.events)


def _stage(stage: str, log: str, ok: object) -> StageResult:
    raw = log.encode("utf-8")
    return StageResult(
        stage=stage,
        command=None,
        rc=None,
        duration_s=None,
        log=bounded_text(raw, LOG_BYTES),
        log_bytes=len(raw),
        ok=ok if isinstance(ok, bool) else None,
        unrecorded=list(_STAGE_UNRECORDED),
    )
