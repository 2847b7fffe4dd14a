"""Sessions -> the attempts table of docs/format.md.

Every benchmark number is recomputed from this flat table, so folding is done by the one reducer
(state.py) and nothing else: one row per attempt that reached a verdict or was hit by an infrastructure
failure. Attempts cut mid-way (a killed run) are not rows; they will be redone on resume. Rows hit by an
infrastructure error are kept with ``infra_error: true`` so they can be counted, and metrics never score
them. A session without its end record is unfinished: its trajectory is not over, so scoring it would count
a failure that has not happened; its rows are left out unless asked for (``include_unfinished``), and
ExportStats counts and names such sessions and the run directory whose ``batch --resume`` finishes them.
Correct attempts without a speedup keep their reason (``speedup_note``) in ExportStats.unspeeded.
This module reads session files; it computes no metric and writes nothing.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import MAX_INPUT_BYTES, is_regular, missing, parse_json, read_small_text, slug
from beavertui.engine.judge import anticheat
from beavertui.engine.judge.classify import compiled
from beavertui.engine.metrics.self_source import source_model_matches
from beavertui.engine.metrics.speedup_ci import speedup_interval
from beavertui.engine.metrics.table import AttemptsTable, from_rows
from beavertui.engine.session import store
from beavertui.engine.session.events import BASELINE_NAMES, BaselineTime, Event, SessionHeader, model_identity
from beavertui.engine.session.state import SessionState, fold
from beavertui.engine.session.store import read_session
from beavertui.engine.timing.named_baselines import speedups

#: Category written for an attempt that an infrastructure failure cut before any verdict.
INFRA_CATEGORY = "infrastructure"


@dataclass
class ExportStats:
    """What a fold over a run directory saw, for the one-line summary."""

    sessions: int = 0
    rows: int = 0
    infra_rows: int = 0
    unfinished_sessions: int = 0
    damaged: list[str] = field(default_factory=list)
    """Files (and folders) left out by the reader policy (``run_sessions``), one line each: the path and why."""
    shared_run_ids: dict[str, list[str]] = field(default_factory=dict)
    """Run id -> the run folders that carry it, where two different runs share one id; the rows of each
    folder after the first carry ``ID (FOLDER)`` as their run id, so the runs are kept apart."""
    unfinished: list[Path] = field(default_factory=list)
    """Session files without an end record."""
    unfinished_included: bool = False
    """Whether the rows of unfinished sessions were yielded (``include_unfinished``)."""
    unspeeded: list[tuple[str, str, int, str]] = field(default_factory=list)
    """(model, task, iteration, reason) of every correct attempt whose speedup is null."""
    withdrawn: dict[str, str] = field(default_factory=dict)
    """Task id -> reason, for the tasks of a run whose sessions were left out because the run withdrew them
    (run.json ``withdrawn_tasks``: validated unusable after the run began)."""
    withdrawn_sessions: int = 0
    """Sessions of those tasks that were left out (finished or not)."""
    unusable: dict[str, str] = field(default_factory=dict)
    """Task id -> reason, for the tasks whose sessions ended ``unusable``: the batch's own check found them
    unusable on its GPU (validation/on_the_run.py); such a session has no attempt, so no rate counts it."""
    unusable_sessions: int = 0
    excluded: dict[str, str] = field(default_factory=dict)
    """Task id -> reason, for the tasks a run left out before it began (run.json ``excluded_tasks``: unusable
    on its GPU, not runnable there...): no session, so no row."""
    timings_pending: int = 0
    """Correct attempts of finished sessions whose timing the batch's timing lane has not appended yet."""
    pending_sessions: list[Path] = field(default_factory=list)
    """Those sessions: left out of every rate like unfinished ones (their scores are not final)."""
    rate_left_out: dict[Path, str] = field(default_factory=dict)
    """Why no rate counts a session the reader read (path -> one line: its task withdrawn from its run, found
    unusable by the batch, the session unfinished or a timing of it pending), as ``export_rows`` decides it:
    for a page that lists every session."""
    unrecorded_attempts: int = 0
    """Scored attempts whose candidate a recorded toolchain had no outcome for (verdict flag ``unrecorded``):
    failed builds by rule, nothing was built (``--toolchain demo`` or ``recorded:PATH``)."""
    unrecorded_tasks: set[str] = field(default_factory=set)
    """The tasks of those attempts."""
    cut_sessions: list[Path] = field(default_factory=list)
    """Sessions an infrastructure failure ended (stop reason ``error``) before their loop was over: their
    judged attempts are left out of every rate like an unfinished session's (the loop had budget left, so
    scoring them counts a failure that has not happened), unless ``include_unfinished``; their attempts the
    failure hit stay rows (``infra_error``), counted as ever. Imported sessions are not among them: a harness
    run cannot be resumed, and the release's analysis scores the records beside an api_error."""
    cut_attempts: int = 0
    """Judged attempts of those sessions that no rate counts (none where they were included)."""
    stopped_sessions: list[Path] = field(default_factory=list)
    """Sessions stopped by the user before their loop was over (stop reason ``stopped``: ``live``'s x or
    Ctrl-C): left out of every rate as the cut ones are, unless ``include_unfinished``; ``live --resume``
    goes on with them."""
    stopped_attempts: int = 0
    """Judged attempts of those sessions that no rate counts."""
    observed_unrecorded: set[str] = field(default_factory=set)
    """Tasks of scored sessions whose header has no ``observed_label`` field at all (written before it was
    recorded; a null value there means the validation agreed with the label)."""

    def resume_dirs(self, cut: bool = False) -> list[Path]:
        """The run directories (holding run.json) of the unfinished sessions and of those with pending
        timings; ``cut``: of the sessions an infrastructure failure ended instead."""
        out: list[Path] = []
        for p in self.cut_sessions if cut else [*self.unfinished, *self.pending_sessions]:
            d = run_dir_of(p)
            if d is not None and d not in out:
                out.append(d)
        return out


def withdrawn_tasks(run_dir: Path | None, key: str = "withdrawn_tasks") -> dict[str, str]:
    """``withdrawn_tasks`` (or another task -> reason map, ``key``: ``excluded_tasks``) of a run directory's
    run.json (empty when there is none or it is unreadable)."""
    if run_dir is None:
        return {}
    try:
        doc = parse_json((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    got = doc.get(key) if isinstance(doc, dict) else None
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}


def run_dir_of(path: Path) -> Path | None:
    """The batch run directory (the nearest folder above holding run.json) of a session file."""
    for d in path.parents:
        if (d / "run.json").is_file():
            return d
    return None


def session_files(root: Path, left_out: list[str] | None = None) -> list[Path]:
    """Session files under a run directory (or the file itself), in the order browse lists them;
    folders not walked (unreadable, too deep) are added to ``left_out``."""
    if not root.is_dir() and not is_regular(root):
        raise missing(root, "run directory or session file")
    return list(store.session_files(root, left_out=left_out))


#: A session file of a run folder is named ``TASK__sSAMPLE.jsonl`` (batch and import write it so).
_RUN_FILE = re.compile(r"(?P<task>.+)__s(?P<sample>[0-9]+)\.jsonl")


def path_disagrees(path: Path, header: SessionHeader) -> str | None:
    """Why a session file's header is not of the session its name stands for (None when it is, or when its
    name is not of the run layout): the task and the sample, as ``batch --resume`` checks them."""
    m = _RUN_FILE.fullmatch(path.name)
    if m is None:
        return None
    if slug(header.task.id) != m["task"]:
        return f"its header names task {header.task.id!r}, its file name task {m['task']!r}"
    if str(header.sample) != m["sample"]:
        return f"its header names sample {header.sample}, its file name sample {m['sample']}"
    return None


def _shown(folder: Path, root: Path) -> str:
    """A folder as the notes name it: under the root given, else whole."""
    with contextlib.suppress(ValueError):
        return str(folder.relative_to(root)) if folder != root else folder.name
    return str(folder)


@dataclass(frozen=True)
class RunSession:
    """A session file that counts, as ``run_sessions`` read it."""

    path: Path
    header: SessionHeader
    events: list[Event]
    problem: str | None
    """None, or a cut last line (a write a kill interrupted: the lines before it are the session so far)."""
    run_id: str
    """The run the session counts in: its header's run id (else the folder given, else its session id);
    ``ID (FOLDER)`` for a second run folder that carries the same id."""
    state: SessionState
    """The events folded."""


def run_sessions(root: Path, stats: ExportStats | None = None) -> Iterator[RunSession]:
    """The session files under ROOT that count, by the one reader policy of ``metrics`` (its table, usage,
    analysis and card), ``export`` and the HTML page: every other file is left out and added to
    ``stats.damaged`` as one line, its path and why.

    Left out: a folder the walk cannot read or that lies too deep; a file that is not a regular file of at
    most 64 MiB; one without a readable header; one damaged before its last line (a bad line, a second
    writer's interleaved lines: what follows the damage is lost, so its trajectory is not known); one whose
    header names another task or sample than its file name (``TASK__sN.jsonl``). A file whose last line only
    was cut counts up to that line. Two run folders (holding run.json) whose sessions carry one run id are
    two runs: the second's run id becomes ``ID (FOLDER)``, so no trajectory of one is merged into the other's.
    """
    left: list[str] = stats.damaged if stats is not None else []
    first_folder: dict[str, Path | None] = {}
    given = root.name if root.is_dir() else None
    for path in session_files(root, left):
        try:
            header, events, problem = read_session(path)
        except BeaverError as exc:  # a FIFO, a device, a link loop, a file too large
            left.append(str(exc))
            continue
        if header is None:
            run = run_dir_of(path) if problem == "empty file" else None
            begun = f" (a session its batch began but never wrote: beavertui batch --resume {run} runs it)"
            left.append(f"{path}: {problem}" + (begun if run is not None else ""))
            continue
        if problem is not None and not problem.startswith("truncated last line"):
            left.append(f"{path}: damaged before its end: {problem}")
            continue
        why = path_disagrees(path, header)
        if why is not None:
            left.append(f"{path}: {why}")
            continue
        run_id = header.run_id or given or header.session_id
        folder = run_dir_of(path)
        first = first_folder.setdefault(run_id, folder)
        if first != folder:
            where = _shown(folder if folder is not None else path.parent, root)
            if stats is not None:
                folders = stats.shared_run_ids.setdefault(run_id, [_shown(first, root) if first else "-"])
                if where not in folders:
                    folders.append(where)
            run_id = f"{run_id} ({where})"
        yield RunSession(path, header, events, problem, run_id, fold(header, events))


class SourceModels:
    """Which model produced each task's broken start: a side table first, then the corpus's instance.json."""

    def __init__(self, table: Mapping[str, str | None] | None = None) -> None:
        self.table = dict(table or {})
        self._cache: dict[tuple[str, str], str | None] = {}

    def lookup(self, header: SessionHeader) -> str | None:
        if header.task.id in self.table:
            return self.table[header.task.id]
        key = (header.task.corpus, header.task.id)
        if key not in self._cache:
            self._cache[key] = _instance_source_model(Path(header.task.corpus) / header.task.id)
        return self._cache[key]


def _instance_source_model(task_dir: Path) -> str | None:
    try:
        data = parse_json((task_dir / "instance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("source_model") if isinstance(data, dict) else None
    return str(value) if value else None


def load_source_models(path: Path) -> dict[str, str | None]:
    """A side table task_id -> source_model: a JSON object, JSON Lines/CSV rows with those two keys."""
    text = read_small_text(path, MAX_INPUT_BYTES, "source-models table")
    rows: list[Mapping[str, Any]]
    if path.suffix.lower() == ".csv":
        import csv
        import io

        rows = list(csv.DictReader(io.StringIO(text)))
    else:
        try:
            data = parse_json(text)
            if isinstance(data, dict) and "task_id" in data:
                rows = [data]  # JSON Lines of one row, not an object keyed by task id
            elif isinstance(data, dict):
                rows = [{"task_id": k, "source_model": v} for k, v in data.items()]
            else:
                rows = list(data)
        except ValueError:
            try:
                rows = [parse_json(line) for line in text.splitlines() if line.strip()]
            except ValueError:
                raise BeaverError(f"{path}: source-models table is neither JSON nor JSON Lines") from None
    out: dict[str, str | None] = {}
    for n, r in enumerate(rows, 1):
        if not isinstance(r, Mapping) or "task_id" not in r:
            raise BeaverError(f"{path}: row {n} has no task_id")
        unknown = [k for k in r if k not in ("task_id", "source_model")]
        if unknown:  # a misspelt source_model would leave the task's source unknown without a word
            raise BeaverError(
                f"{path}: row {n}: unknown key {unknown[0]!r} (a row holds task_id and source_model)"
            )
        model = r.get("source_model")
        if model is not None and not isinstance(model, str):
            raise BeaverError(
                f"{path}: row {n}: source_model {model!r} is not a model name (a string, or null)"
            )
        out[str(r["task_id"])] = model or None
    return out


def rows_of_session(
    state: SessionState, *, run_id: str | None = None, source_model: str | None = None
) -> Iterator[dict[str, Any]]:
    """The attempts-table rows of one folded session, in iteration order; ``run_id``: the run it counts in
    (``run_sessions``), else its header's."""
    h = state.header
    proto = h.protocol
    repeated = proto.method == "repeated"
    self_source = bool(proto.self_source) or source_model_matches(h.model.name, source_model)
    scored = [a for a in state.attempts if a.verdict is not None or a.infra_errors]
    stop = state.end.stop_reason if state.end is not None else None
    corpus = Path(h.task.corpus).name or h.task.corpus
    named = "+".join(b.name for b in h.baselines) or None
    for i, a in enumerate(scored):
        v = a.verdict
        last = i == len(scored) - 1
        t = a.timing.result if a.timing is not None else None
        ci = (
            speedup_interval(t.reference_samples, t.candidate_samples, method=t.method, runs=t.runs)
            if t is not None
            else None
        )
        yield {
            "run_id": run_id or h.run_id or h.session_id,
            "model": model_identity(h.model),
            "task_id": h.task.id,
            "protocol": proto.key(),
            "sample": h.sample * proto.budget + a.iteration - 1 if repeated else h.sample,
            "iteration": 1 if repeated else a.iteration,
            "category": v.category if v is not None else INFRA_CATEGORY,
            "compiled": v is not None and compiled(v.category, v.signature),
            "correct": bool(v.correct) if v is not None else False,
            "speedup": v.speedup if v is not None else None,
            "speedup_lo": ci[0] if ci is not None and v is not None and v.speedup is not None else None,
            "speedup_hi": ci[1] if ci is not None and v is not None and v.speedup is not None else None,
            "stop_reason": stop if last else None,
            "self_source": self_source,
            "family": h.task.family,
            "label": h.task.label,
            "observed_label": h.task.observed_label,
            "corpus": corpus,
            "infra_error": bool(a.infra_errors),
            "flagged": v is not None and anticheat.is_flagged(v.flags),
            "unstable_timing": v is not None and any(f.name == "unstable_timing" for f in v.flags),
            **_against(
                h.baselines, named, t.candidate_ms if t is not None and v is not None and v.speedup else None
            ),
        }


def _against(
    baselines: Sequence[BaselineTime], named: str | None, candidate_ms: float | None
) -> dict[str, Any]:
    """The ``baselines`` column and each ``speedup_<name>`` of an attempt whose session header has named
    baselines (nothing otherwise: the row stays as before they existed)."""
    if named is None:
        return {}
    got = speedups(baselines, candidate_ms)
    return {
        "baselines": named,
        **{f"speedup_{n}": got.get(n) for n in BASELINE_NAMES if n in named.split("+")},
    }


#: Something else that wants every session a reading of a run reads (the analysis, the usage, the card's
#: headers, the HTML page): called with each RunSession before the table's own rules leave any out, so
#: one pass over the files serves them all.
SessionTap = Callable[[RunSession], object]


def export_rows(
    root: Path, *, source_models: SourceModels | None = None, stats: ExportStats | None = None,
    include_unfinished: bool = False, taps: Sequence[SessionTap] = (), scored_taps: Sequence[SessionTap] = (),
) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Rows of every finished session under a run directory (and of unfinished ones when asked); each
    session read is also handed to every tap, and each session whose rows the table takes (none that its
    rules leave out: withdrawn, unusable, unfinished or with a timing pending, unless asked) to every one
    of ``scored_taps`` (what is scored beside the rates, as the analysis, must score the same sessions)."""
    sources = source_models or SourceModels()
    stats = stats if stats is not None else ExportStats()
    stats.unfinished_included = include_unfinished
    withdrawn: dict[Path | None, dict[str, str]] = {}
    for read in run_sessions(root, stats):
        for tap in taps:
            tap(read)
        run = run_dir_of(read.path)
        if run not in withdrawn:
            withdrawn[run] = withdrawn_tasks(run)
            stats.excluded.update(withdrawn_tasks(run, "excluded_tasks"))
        if _taken_out(read, withdrawn[run], stats):
            continue
        stats.sessions += 1
        if _not_final(read, run, stats, include_unfinished):
            continue
        # a loop cut by an infrastructure failure or stopped: only the attempts a failure hit are rows
        # (counted, never scored), unless asked to include it
        cut = _cut(read, run, stats, include_unfinished) and not include_unfinished
        _count_attempts(read, stats, cut)
        for tap in () if cut else scored_taps:
            tap(read)
        for row in rows_of_session(read.state, run_id=read.run_id, source_model=sources.lookup(read.header)):
            if cut and not row["infra_error"]:
                continue
            stats.rows += 1
            stats.infra_rows += row["infra_error"]
            yield row


def _taken_out(read: RunSession, withdrawn: Mapping[str, str], stats: ExportStats) -> bool:
    """The session's task was withdrawn from its run, or the batch found it unusable on its GPU: in no rate,
    finished or not (counted in ``stats``)."""
    path, task = read.path, read.header.task.id
    if task in withdrawn:
        stats.withdrawn[task] = withdrawn[task]
        stats.withdrawn_sessions += 1
        stats.rate_left_out[path] = f"withdrawn from its run: {withdrawn[task]}"
        return True
    end = read.state.end
    if end is not None and end.stop_reason == "unusable":
        stats.unusable[task] = end.detail or "unusable here"
        stats.unusable_sessions += 1
        stats.rate_left_out[path] = f"found unusable on its GPU by the batch: {stats.unusable[task]}"
        return True
    return False


def _not_final(read: RunSession, run: Path | None, stats: ExportStats, include_unfinished: bool) -> bool:
    """The session waits for timings or has no end line, and is left out for it (unless
    ``include_unfinished``); counted in ``stats`` either way."""
    path, state = read.path, read.state
    resume = f"beavertui batch --resume {run}" if run is not None else "run it to the end"
    waiting = sum(1 for v in state.verdicts if v.timing_pending) if state.end is not None else 0
    if waiting:
        stats.timings_pending += waiting
        stats.pending_sessions.append(path)
        if not include_unfinished:
            stats.rate_left_out[path] = (
                f"{waiting} timing(s) pending, not yet appended by the timing lane ({resume})"
            )
            return True
    if state.end is None:
        stats.unfinished_sessions += 1
        stats.unfinished.append(path)
        if not include_unfinished:
            stats.rate_left_out[path] = f"unfinished, no end line (finish it: {resume})"
            return True
    return False


def _cut(read: RunSession, run: Path | None, stats: ExportStats, include_unfinished: bool) -> bool:
    """Whether the session's loop was cut before it was over: ended by an infrastructure failure, or
    stopped (an imported session never is); counted in ``stats``."""
    path, end = read.path, read.state.end
    stop = end.stop_reason if end is not None else None
    cut = stop in ("error", "stopped") and read.header.imported is None
    if stop == "error" and cut:
        stats.cut_sessions.append(path)
        if not include_unfinished:
            again = (
                f"beavertui batch --resume {run} --retry-infra"
                if run is not None
                else f"beavertui live --resume {path}"
            )
            stats.rate_left_out[path] = (
                f"ended by an infrastructure failure before its loop was over ({again})"
            )
    elif cut:
        stats.stopped_sessions.append(path)
        if not include_unfinished:
            stats.rate_left_out[path] = (
                f"stopped before its loop was over (go on: beavertui live --resume {path})"
            )
    return cut


def _count_attempts(read: RunSession, stats: ExportStats, cut: bool) -> None:
    """What ``stats`` says of the session's attempts: the judged ones a cut loop leaves out, candidates a
    recorded toolchain had no outcome for, correct ones without a speedup, tasks without an observed label."""
    header, end = read.header, read.state.end
    for a in read.state.attempts:
        v = a.verdict
        if cut:
            judged = v is not None and not a.infra_errors
            if end is not None and end.stop_reason == "error":
                stats.cut_attempts += judged
            else:
                stats.stopped_attempts += judged
            continue
        if v is not None and any(f.name == "unrecorded" for f in v.flags):
            stats.unrecorded_attempts += 1
            stats.unrecorded_tasks.add(header.task.id)
        if v is not None and v.correct and v.speedup is None:
            why = v.speedup_note or ("not timed" if not a.infra_errors else "infrastructure error")
            stats.unspeeded.append((model_identity(header.model), header.task.id, a.iteration, why))
    if "observed_label" not in header.task.model_fields_set:
        stats.observed_unrecorded.add(header.task.id)


def table_from_run(
    root: Path, *, source_models: SourceModels | None = None, stats: ExportStats | None = None,
    include_unfinished: bool = False, taps: Sequence[SessionTap] = (), scored_taps: Sequence[SessionTap] = (),
) -> AttemptsTable:  # fmt: skip
    """The AttemptsTable of a run directory (metrics' entry point for a run dir)."""
    return from_rows(
        export_rows(
            root,
            source_models=source_models,
            stats=stats,
            include_unfinished=include_unfinished,
            taps=taps,
            scored_taps=scored_taps,
        )
    )


def iter_session_states(paths: Iterable[Path]) -> Iterator[tuple[Path, SessionState]]:
    """Fold each readable session file (damaged ones skipped)."""
    for path in paths:
        try:
            header, events, _ = read_session(path)
        except BeaverError:
            continue
        if header is not None:
            yield path, fold(header, events)
