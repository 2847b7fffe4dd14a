"""The compile cache: an identical candidate (same code, harness, build command and toolkit) is built once.

Under stagnation and repeated sampling the same candidate comes back often; its build result and the
files the build produced are kept under ``<cache>/<key[:2]>/<key>/`` and copied into the next work dir
instead of building again. Failed builds are cached too (their log is the feedback). The cache is
node-local (one per machine, shared by every session on it) and written atomically (a rename), so two
sessions racing on one key both see a complete entry or none. Each entry lists its files with their sizes
and sha256; an entry that no longer matches (unreadable result, a file missing, changed or truncated) is
corrupt: it is removed and counted, and the candidate is built again, so a damaged cache costs a build,
never a wrong verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.fileio import remove_tree, walk, write_atomic
from beavertui.engine.session.events import StageResult


def cache_key(code: str, harness: str, build_command: str, toolkit: str) -> str:
    h = hashlib.sha256()
    for part in (code, harness, build_command, toolkit):
        h.update(part.encode("utf-8", "replace"))
        h.update(b"\0")
    return h.hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    stored: int = 0
    corrupt: int = 0
    first_corrupt: str = ""
    """Entry and what was wrong with the first corrupt entry found."""


def _digest(path: Path) -> list[int | str]:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return [path.stat().st_size, h.hexdigest()]


class _Corrupt(Exception):
    pass


class CompileCache:
    """Build results and outputs by key."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.stats = CacheStats()
        self._lock = threading.Lock()

    def _dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str, workdir: Path) -> StageResult | None:
        """The cached build result with its outputs copied into ``workdir``; None on a miss."""
        entry = self._dir(key)
        meta = entry / "result.json"
        if not meta.is_file():
            with self._lock:
                self.stats.misses += 1
            return None
        t0 = time.monotonic()
        try:
            result = StageResult.model_validate_json(meta.read_text(encoding="utf-8"))
            self._verify(entry)
        except (ValueError, OSError, _Corrupt) as exc:  # ValidationError is a ValueError
            self._discard(entry, exc)
            return None
        files = entry / "files"
        if files.is_dir():
            shutil.copytree(files, workdir, symlinks=True, dirs_exist_ok=True)
        with self._lock:
            self.stats.hits += 1
        # the stage took the restore time; the original build's time stays in the cache entry
        return result.model_copy(update={"cached": True, "duration_s": round(time.monotonic() - t0, 4)})

    @staticmethod
    def _verify(entry: Path) -> None:
        listing = entry / "files.json"
        if not listing.is_file():
            return  # written before entries listed their files
        want = json.loads(listing.read_text(encoding="utf-8"))
        if not isinstance(want, dict):
            raise _Corrupt("files.json is not an object")
        for rel, sig in want.items():
            f = entry / "files" / rel
            if not f.is_file():
                raise _Corrupt(f"{rel} is missing")
            if _digest(f) != sig:
                raise _Corrupt(f"{rel} changed since it was stored")

    def _discard(self, entry: Path, exc: BaseException) -> None:
        """Take a corrupt entry out of the cache (renamed first, so no reader sees half of it)."""
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        with self._lock:
            self.stats.misses += 1
            self.stats.corrupt += 1
            if not self.stats.first_corrupt:
                self.stats.first_corrupt = f"{entry}: {why}"[:300]
        gone = entry.parent / f".tmp-corrupt-{os.getpid()}-{threading.get_ident()}"
        try:
            os.rename(entry, gone)
        except OSError:
            return  # another session removed it first
        remove_tree(gone)

    def put(self, key: str, result: StageResult, workdir: Path, outputs: list[str]) -> None:
        """Store a build result and the named output files (paths relative to ``workdir``)."""
        entry = self._dir(key)
        if entry.exists():
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
        try:
            listing: dict[str, list[int | str]] = {}
            for rel in outputs:
                src = workdir / rel
                if src.is_file() and not src.is_symlink():
                    dst = tmp / "files" / rel
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)
                    listing[rel] = _digest(dst)
            # the entry's folder is renamed into place whole; its listing checks the files on every read
            write_atomic(tmp / "files.json", json.dumps(listing), durable=False)
            write_atomic(tmp / "result.json", result.model_dump_json(), durable=False)
            try:
                os.rename(tmp, entry)
            except OSError:  # another session stored it first
                remove_tree(tmp)
                return
        except OSError:
            remove_tree(tmp)
            return
        with self._lock:
            self.stats.stored += 1

    def summary(self) -> dict[str, int]:
        st = self.stats
        return {"hits": st.hits, "misses": st.misses, "stored": st.stored, "corrupt": st.corrupt}


def snapshot(root: Path, left_out: list[str] | None = None) -> dict[str, tuple[float, int]]:
    """(mtime, size) of every regular file under ``root`` (symlinked folders not followed), by
    ``fileio.walk``: a folder it cannot read or deeper than 64 is added to ``left_out`` (a build whose
    outputs were not all seen is not stored)."""
    out: dict[str, tuple[float, int]] = {}
    for p in walk(root, left_out=left_out):
        if p.is_symlink() or not p.is_file():
            continue
        st = p.stat()
        out[p.relative_to(root).as_posix()] = (st.st_mtime_ns, st.st_size)
    return out


def changed(before: dict[str, tuple[float, int]], after: dict[str, tuple[float, int]]) -> list[str]:
    """Files created or modified between two snapshots."""
    return sorted(rel for rel, sig in after.items() if before.get(rel) != sig)


def toolkit_id() -> str:
    """The CUDA toolkit the builds use (``nvcc --version`` last line), or 'none'."""
    import subprocess

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return "none"
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    return json.dumps(lines[-2:])
