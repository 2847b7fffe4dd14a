"""The run directory: ``sessions/<run_id>/<model>/<protocol>/<task>__s<sample>.jsonl`` plus ``run.json``.

The manifest records what the batch is (protocols, models, tasks, corpus, samples) so ``--resume`` can
continue it without the original command line, and what ran it (host, GPUs, tool version). The
infrastructure log ``infra.jsonl`` keeps every infrastructure failure, including those of attempts
that were retried; the stage log ``stages.jsonl`` every stage's wait for its build slot or GPU and its
hold. This module lays out paths and reads/writes these files; it runs nothing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import platform
import re
import socket
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from beavertui.batch.protocol_file import ModelSpec
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import PARTIAL_SUFFIX, append_line, slug, walk, write_atomic
from beavertui.engine.session.protocol import Protocol, with_legacy_gate
from beavertui.engine.session.redaction import redact_fields, without_userinfo

MANIFEST = "run.json"

#: How run.json writes its times (``created``, ``resumed``): local time with its UTC offset.
STAMP = "%Y-%m-%dT%H:%M:%S%z"


def stamp() -> str:
    """Now, as run.json writes it."""
    return time.strftime(STAMP)


def stamp_seconds(text: object) -> float | None:
    """A run.json time as epoch seconds (None when it is missing or not in that form)."""
    from datetime import datetime

    try:
        return datetime.strptime(str(text), STAMP).timestamp() if isinstance(text, str) else None
    except ValueError:
        return None


INFRA_LOG = "infra.jsonl"
#: Every build slot and GPU hold of the run's stages, one line each (what a run waited for, and where).
STAGE_LOG = "stages.jsonl"
#: Suffix of files written then renamed into place; one left by a killed run is removed on resume.
TMP_SUFFIX = PARTIAL_SUFFIX


class ProtocolEntry(BaseModel):
    """One protocol of the batch and its folder name."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    slug: str
    """Folder name under each model."""
    protocol: Protocol
    """The full protocol."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_gate(cls, data: object) -> object:
        """A manifest written before ``gate_mode`` existed ran the in-loop gate: resume it as such."""
        if isinstance(data, dict) and "protocol" in data:
            data = {**data, "protocol": with_legacy_gate(data["protocol"])}
        return data


class RunManifest(BaseModel):
    """``run.json``: what the batch is and what ran it."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    """Folder name of the run."""
    name: str
    """Batch name from the protocol file."""
    created: str
    """ISO time the run was created."""
    command: str = ""
    """The command line that created it."""
    tool_version: str = ""
    """beavertui version."""
    corpus: str
    """Corpus root."""
    tasks: list[str]
    """Task ids in the batch."""
    task_hashes: dict[str, str] = Field(default_factory=dict)
    """Task id -> fingerprint of its broken start and harness when the run was made; a resume on a corpus
    whose task differs is refused (empty in a run.json older than this field)."""
    excluded_tasks: dict[str, str] = Field(default_factory=dict)
    """Task id -> why it was left out (not runnable, malformed)."""
    withdrawn_tasks: dict[str, str] = Field(default_factory=dict)
    """Task id -> why it was taken out of the run after the run began: a resume found its validation on
    this GPU (stored after the run was created) calling it unusable. Its sessions that ran stay on disk and
    are left out of every rate; its sessions that had not finished do not run."""
    samples: int = 1
    """Trajectories per (model, protocol, task)."""
    protocols: list[ProtocolEntry]
    """Expanded protocols."""
    pairings: list[dict[str, Any]] = Field(default_factory=list)
    """Named comparisons across more than one axis from the protocol file (``name``, ``a``, ``b``)."""
    models: list[ModelSpec]
    """Models under test (no keys)."""
    retries: int = 1
    """Retries of a session ended by an infrastructure failure."""
    executor: str = "local"
    """local or ray."""
    gpus: list[str] = Field(default_factory=list)
    """GPUs the scheduler used."""
    host: dict[str, Any] = Field(default_factory=dict)
    """Host name, CPU count, platform, Python."""
    toolchain: str = "local"
    """``local`` (this machine's GPUs) or ``recorded:PATH``."""
    validation: dict[str, Any] | None = None
    """Corpus validation on this GPU, when known."""
    status: str = "running"
    """running, finished or interrupted (a killed run stays 'running')."""
    resumed: list[str] = Field(default_factory=list)
    """ISO times of each resume."""
    reply_cache: str | None = None
    """Folder of the reply cache the run reads and fills (None: every reply asked of the endpoint)."""
    reply_cache_sampled: bool = False
    """Also reuse replies sampled at temperature > 0 (a stored reply is not a fresh sample)."""
    summary: dict[str, Any] = Field(default_factory=dict)
    """Counts written at the end: sessions, passed, infrastructure failures, cache hits, GPU busy."""


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_run_id(run_id: str) -> str:
    """A run id that names one folder directly inside the sessions folder, or a BeaverError."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise BeaverError(
            f"--run-id {run_id!r}: a run id is one folder name (letters, digits, '.', '_' and '-', "
            "at most 128, no '..'), so the run stays inside --sessions-dir"
        )
    return run_id


def new_run_id(name: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug(name)}-{os.getpid() % 10000:04d}"


def session_path(run_dir: Path, model: str, protocol_slug: str, task_id: str, sample: int) -> Path:
    return run_dir / slug(model) / protocol_slug / f"{slug(task_id)}__s{sample}.jsonl"


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def without_credentials(spec: ModelSpec) -> ModelSpec:
    """A model entry as files record it: its base URL's user info and its extra body's secret fields
    ``[redacted]`` (the key itself is never in an entry, only the name of its variable)."""
    update: dict[str, Any] = {}
    url = without_userinfo(spec.base_url)
    if url != spec.base_url:
        update["base_url"] = url
    body = redact_fields(spec.extra_body)
    if body != spec.extra_body:
        update["extra_body"] = body
    return spec.model_copy(update=update) if update else spec


def write_manifest(run_dir: Path, manifest: RunManifest) -> None:
    """Atomically replace run.json (models without their credentials)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    stored = manifest.model_copy(update={"models": [without_credentials(m) for m in manifest.models]})
    write_atomic(run_dir / MANIFEST, stored.model_dump_json(indent=2))


def remove_partial_files(run_dir: Path) -> int:
    """Remove the temporary files a killed run left behind (never a session or the manifest)."""
    n = 0
    for p in walk(run_dir):  # the run's folders, as deep as a reader of its sessions goes
        if p.name.startswith(".") and p.name.endswith(TMP_SUFFIX) and p.is_file() and not p.is_symlink():
            with contextlib.suppress(OSError):
                p.unlink()
                n += 1
    return n


#: The largest run.json any reader accepts (a run of 10,000 tasks and 100 models is about 1 MiB).
MAX_MANIFEST_BYTES = 16 << 20


def read_manifest(run_dir: Path) -> RunManifest:
    """run.json of a run folder; a BeaverError in one line for anything else (a session file given instead
    of its run's folder, a folder with no run.json, a run.json that is a folder, a FIFO, not UTF-8 or
    damaged, protocol folder names that would leave the run folder)."""
    from beavertui.engine.fileio import read_small_text

    if run_dir.is_file():
        hint = " (a session file: give the folder of its run, the one holding run.json)"
        raise BeaverError(
            f"{run_dir}: is a file, not a run folder{hint if run_dir.suffix == '.jsonl' else ''}"
        )
    if not run_dir.is_dir():
        raise BeaverError(f"{run_dir}: no such run folder")
    path = run_dir / MANIFEST
    if not os.path.lexists(path):
        raise BeaverError(f"{run_dir}: not a run folder (no {MANIFEST})")
    text = read_small_text(path, MAX_MANIFEST_BYTES, "run manifest")
    try:
        manifest = RunManifest.model_validate_json(text)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise BeaverError(f"{path}: damaged manifest: {where + ': ' if where else ''}{err['msg']}") from None
    except RecursionError:
        raise BeaverError(f"{path}: damaged manifest: nested too deeply") from None
    for entry in manifest.protocols:
        if slug(entry.slug) != entry.slug:
            raise BeaverError(
                f"{path}: damaged manifest: protocol folder name {entry.slug!r} is not one plain folder name"
            )
    return manifest


#: The lock file of a run folder: held (flock) by the one batch writing the run.
LOCK = ".run.lock"


class RunInUse(BeaverError):
    """Another batch holds the run folder's lock."""


class RunLock:
    """The exclusive lock of one run folder, held until ``release()`` or the process ends (even killed)."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.release()


def lock_run(run_dir: Path) -> RunLock:
    """Take the run folder's lock, or RunInUse naming who holds it. One writer per run: two batches resuming
    one run at once would write the same sessions."""
    import fcntl

    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise RunInUse(
            f"{run_dir}: another batch is writing this run ({holder}); wait for it to end or stop it, "
            f"then continue with --resume {run_dir}"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp()}".encode(), 0)
    return RunLock(fd, path)


#: Write failures that no retry fixes, and how to say them.
_STORAGE = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (a file size limit was reached)",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EIO: "input/output error (a failing disk?)",
}


class StorageError(BeaverError):
    """Writing the run (sessions, manifest, logs) failed in a way no retry fixes: a full disk, a
    read-only or unwritable folder, a file size limit. The batch stops; what was written stays."""


def storage_error(exc: OSError) -> StorageError | None:
    """The one-line StorageError for a write failure of that kind, or None for any other OSError."""
    reason = _STORAGE.get(exc.errno or 0)
    if reason is None:
        return None
    where = exc.filename if exc.filename is not None else "the run directory"
    return StorageError(f"cannot write {where}: {reason}")


def log_infra(run_dir: Path, record: dict[str, Any]) -> None:
    """Append one infrastructure failure to infra.jsonl, one whole line (fileio.append_line)."""
    append_line(run_dir / INFRA_LOG, json.dumps({"t": time.time(), **record}))


def log_stage(run_dir: Path, record: dict[str, Any]) -> None:
    """Append one stage's wait and hold to stages.jsonl, one whole line (the fields: placement.py)."""
    append_line(run_dir / STAGE_LOG, json.dumps(record))


def read_infra(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / INFRA_LOG
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
