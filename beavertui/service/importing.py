"""Importing another program's run: a folder of session files plus ``run.json`` saying where they came from.

``import_harness_run`` reads a CUDABeaver harness run directory (engine/importers/cudabeaver.py makes the
events), writes one session file per task into a fresh folder and a ``run.json`` with the provenance
(source run, model, protocol, counts, what was not scored and why, what the harness did not record).
The folder is written beside its final name and renamed into place, so a failed import leaves nothing
that looks like a finished one. Every session written is one the readers take whole: the importer cuts
what a run here would cut, and a session that would still pass MAX_SESSION_BYTES (or a header past
MAX_HEADER_CHARS) refuses the import in one line. ``metrics``, ``replay``, ``browse`` and ``export`` read it as any run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beavertui import __version__
from beavertui.batch.rundir import stamp
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import remove_tree, slug, write_atomic
from beavertui.engine.importers.cudabeaver import (
    NOT_RECORDED,
    SOURCE,
    ImportCounts,
    ImportedSession,
    import_sessions,
)
from beavertui.engine.importers.harness_run import HarnessRun, read_run
from beavertui.engine.session.store import MAX_SESSION_BYTES, SessionWriter, dump_line

MANIFEST = "run.json"


@dataclass(frozen=True)
class ImportOptions:
    run_dir: Path
    """The harness run directory."""
    out: Path | None = None
    """The folder to write; None: ``<sessions_dir>/cudabeaver-<run id>``."""
    corpus: Path | None = None
    """Where the tasks' broken starts and references are read from; None: the release around the run
    directory, when it still sits inside one."""
    sessions_dir: Path = Path("sessions")
    command: tuple[str, ...] = ()
    """The command line, as run.json records it."""


@dataclass(frozen=True)
class ImportResult:
    out: Path
    run: HarnessRun
    counts: ImportCounts
    sessions: tuple[Path, ...]


def import_harness_run(options: ImportOptions) -> ImportResult:
    """Import one harness run; a BeaverError in one line for a bad run directory or output folder."""
    run = read_run(options.run_dir)
    out = options.out or options.sessions_dir / f"cudabeaver-{slug(run.run_id)}"
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BeaverError(f"{out}: already exists; give another --out or remove it")
    counts = ImportCounts()
    sessions = list(import_sessions(run, options.corpus, counts))
    partial = out.with_name(f".{out.name}.partial")
    if not remove_tree(partial):
        raise BeaverError(f"{partial}: a previous import's leftover folder cannot be removed")
    written: list[Path] = []
    try:
        partial.mkdir(parents=True)
        for s in sessions:
            path = partial / f"{slug(s.task_id)}__s{s.header.sample}.jsonl"
            _write(path, s)
            written.append(out / path.name)
        write_atomic(
            partial / MANIFEST, json.dumps(_manifest(run, out, counts, sessions, options), indent=2) + "\n"
        )
        if out.exists():
            out.rmdir()
        partial.rename(out)
    except (OSError, BeaverError) as exc:
        remove_tree(partial)
        if isinstance(exc, BeaverError):
            raise BeaverError(f"{out}: nothing imported: {exc}") from None
        raise BeaverError(f"{out}: cannot write the imported sessions: {exc.strerror or exc}") from None
    return ImportResult(out=out, run=run, counts=counts, sessions=tuple(written))


def _write(path: Path, session: ImportedSession) -> None:
    """Write one session, refusing (a BeaverError, before the file passes the bound) one that the session
    readers would refuse: a header over MAX_HEADER_CHARS, a file over MAX_SESSION_BYTES."""
    with SessionWriter(path, session.header) as writer:  # refuses a header the reader would refuse
        size = path.stat().st_size
        for event in session.events:
            size += len(dump_line(event).encode("utf-8")) + 1
            if size > MAX_SESSION_BYTES:
                raise BeaverError(
                    f"task {session.task_id}: its session would be more than the {MAX_SESSION_BYTES:,} bytes "
                    f"a session file may have (at its event {writer.count + 1} of {len(session.events)})"
                )
            writer.append(event)


def _manifest(
    run: HarnessRun,
    out: Path,
    counts: ImportCounts,
    sessions: list[ImportedSession],
    options: ImportOptions,
) -> dict[str, Any]:
    first = sessions[0].header if sessions else None
    summary = run.summary or {}
    return {
        "run_id": out.name,
        "name": str(run.config["experiment"].get("name") or run.run_id),
        "created": stamp(),
        "command": " ".join(options.command) if options.command else "",
        "tool_version": __version__,
        "status": "imported",
        "tasks": [s.task_id for s in sessions],
        "imported": {
            "source": SOURCE,
            "run_dir": str(run.root),
            "run_id": run.run_id,
            "model": first.model.model_dump(mode="json") if first else None,
            "protocol": first.protocol.model_dump(mode="json") if first else None,
            "corpus": counts.corpus,
            "tasks_without_corpus": counts.tasks_without_corpus,
            "records": counts.records,
            "scored_attempts": counts.scored,
            "sessions": counts.sessions,
            "not_scored": dict(counts.dropped),
            "missing_files": counts.missing_files,
            "not_recorded": list(NOT_RECORDED),
            "harness_summary": {
                k: summary[k]
                for k in ("timestamp", "total_tasks", "tasks_solved", "solve_rate", "core_metrics")
                if k in summary
            },
        },
    }
