"""A task's harness by content: the sha256 of every file of its testbench and shared folders.

The harness hash is what baselines, stored verdicts, recordings and session headers are keyed by, and
what an attempt checks its work dir against; nothing here copies, builds or runs anything.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from beavertui.engine.fileio import walk
from beavertui.engine.host import sandbox

if TYPE_CHECKING:
    from beavertui.engine.corpus.task import Task


def hash_tree(root: Path, skip: set[str]) -> dict[str, str]:
    """sha256 of every regular file under ``root`` (relative paths), following no symlinked folders and
    skipping the stages' private folder. Walked by ``fileio.walk``: at most 64 folders deep, as a task is
    when it loads (load refuses a deeper one), so a work dir's deeper folders, which hold no harness file,
    are not hashed; a folder it cannot read is not either (a harness file in it reads as changed)."""
    out: dict[str, str] = {}
    private = root / sandbox.PRIVATE_ROOT  # the stage's home, temp and caches
    for p in walk(root, enter=lambda folder: folder != private):
        rel = p.relative_to(root).as_posix()
        if rel in skip or p.is_symlink() or not p.is_file():
            continue
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        out[rel] = h.hexdigest()
    return out


def harness_hash(task: Task) -> str:
    """One sha256 over the task's harness (testbench + copied shared folders, without the solution)."""
    h = hashlib.sha256()
    for src, dest in ((task.testbench, ""), *task.extra_dirs):
        for rel, digest in sorted(hash_tree(src, {task.solution_file} if not dest else set()).items()):
            h.update(f"{dest}/{rel}:{digest}\n".encode())
    return h.hexdigest()


def reference_hash(task: Task) -> str:
    """The first 16 hex digits of the sha256 of the task's reference source (of "" when it has none)."""
    return hashlib.sha256((task.reference() or "").encode()).hexdigest()[:16]
