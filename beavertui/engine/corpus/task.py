"""The Task: one broken start with its harness, in either corpus layout (docs/format.md, Tasks).

A Task is an in-memory value built by corpus.py; it holds paths and the parsed metadata, and knows how
to read its own files. It never runs anything.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from beavertui.engine.corpus import fixes, patch
from beavertui.engine.errors import TaskError
from beavertui.engine.judge.categories import label_category
from beavertui.engine.session.events import TaskRef

Layout = Literal["native", "release"]

MINIMAL_FIX = "minimal_fix.patch"
"""A native task's smallest verified repair: a unified diff from its broken start to a correct kernel that
keeps the reference's speed. Edit precision and bug recall are scored against it when the corpus's record
(fixes.RECORD) marks it verified."""


@dataclass(frozen=True)
class Timeouts:
    """Time limits of the stages, seconds."""

    build_s: float = 300.0
    run_s: float = 120.0
    run_from: str | None = None
    """Where ``run_s`` came from, when not from the task itself (engine/corpus/run_limit.py)."""
    own_run_s: float | None = None
    """The task's own run limit, where ``run_s`` was set from its reference's run time."""


@dataclass(frozen=True)
class TimingDriver:
    """How a native task times reference and candidate in one process (input.json ``timing_driver``)."""

    library_command: str
    """Builds a solution in its work dir as a side library exporting the task's entry point."""
    library: str
    """The side library's file, relative to the work dir."""
    driver_command: str
    """Builds the timing driver (in the reference's work dir)."""
    driver: str
    """The driver's file, relative to the work dir."""
    driver_args: str = ""
    """Arguments of every driver run; the engine adds ``--reference``, ``--candidate``, ``--rounds``."""
    folders: tuple[tuple[Path, str], ...] = ()
    """(corpus folder, name in the work dir) copied into a work dir before its timing builds: the timing
    sources, which the correctness harness (harness_hash) does not include."""
    unavailable: str | None = None
    """Why this task cannot be timed in one process here (its timing folder is not in the corpus), or None."""


@dataclass(frozen=True)
class Task:
    """A broken-start task."""

    id: str
    family: str
    label: str
    """error_category as given (release labels kept verbatim)."""
    difficulty: str | None
    root: Path
    """The task folder."""
    corpus_root: Path
    layout: Layout
    build_command: str
    test_command: str
    solution_file: str
    broken_start_path: Path
    reference_path: Path | None
    prompt_path: Path
    testbench: Path
    error_log_path: Path | None = None
    benchmark_command: str | None = None
    tags: tuple[str, ...] = ()
    min_sm: int | None = None
    required_features: tuple[str, ...] = ()
    timeouts: Timeouts = field(default_factory=Timeouts)
    upstream_library: str | None = None
    provenance: str | None = None
    source_model: str | None = None
    broken_start_hash: str | None = None
    level: str | None = None
    extra_dirs: tuple[tuple[Path, str], ...] = ()
    """Shared folders the harness needs besides testbench/: (source folder, path inside the work dir).
    Native corpora: ``corpus/_common`` -> ``_common``; the release: ``data/_external/cutlass`` ->
    ``reference_sources/cutlass`` and the like. Copied (or linked read-only) into every work dir and
    hashed with the harness."""
    linked_dirs: tuple[tuple[Path, str], ...] = ()
    """Large read-only shared folders (the release's ``_external`` CUTLASS/ThunderKittens) linked, not
    copied, into every work dir: (source folder, path inside the work dir). Not hashed."""
    pythonpath: tuple[Path, ...] = ()
    """Folders put on PYTHONPATH for the task's commands (the release's ``harness/_vendor``)."""
    work_flop: float | None = None
    """FLOPs of one timed call (native input.json ``work.flop``), for throughput reports."""
    work_bytes: float | None = None
    """Minimal bytes moved by one timed call (native input.json ``work.bytes``)."""
    runnable: bool = True
    """False when the task cannot run anywhere as shipped (e.g. no build/test command)."""
    not_runnable_reason: str | None = None
    timing_driver: TimingDriver | None = None
    """In-process timing of reference and candidate; None: timed through ``benchmark_command`` or CUPTI."""

    @property
    def display_label(self) -> str:
        """The label mapped to docs/format.md (categories) names (or perf_broken)."""
        return label_category(self.label)

    @property
    def language(self) -> str:
        """Language of the solution file, from its extension."""
        suffix = Path(self.solution_file).suffix
        return {".py": "python", ".h": "cpp", ".hpp": "cpp", ".cuh": "cuda", ".cpp": "cpp"}.get(
            suffix, "cuda"
        )

    def prompt(self) -> str:
        return self.prompt_path.read_text(encoding="utf-8", errors="replace")

    def broken_start(self) -> str:
        return self.broken_start_path.read_text(encoding="utf-8", errors="replace")

    def reference(self) -> str | None:
        if self.reference_path is None or not self.reference_path.is_file():
            return None
        return self.reference_path.read_text(encoding="utf-8", errors="replace")

    @property
    def minimal_fix_path(self) -> Path:
        return self.root / MINIMAL_FIX

    def minimal_fix(self) -> str | None:
        """The broken start with the task's minimal fix applied; None when the task ships no fix.

        Raises TaskError (one line naming the file, the hunk and the line) when the patch cannot be read or
        does not apply exactly to the broken start."""
        p = self.minimal_fix_path
        if not p.is_file():
            return None
        where = f"{self.id}/{MINIMAL_FIX}"
        try:
            diff = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TaskError(f"{where}: cannot read ({exc})") from None
        try:
            return patch.apply(self.broken_start(), diff)
        except patch.PatchError as exc:
            raise TaskError(f"{where}: {exc}") from None

    def verified_minimal_fix(self) -> str | None:
        """The minimal fix, only when the corpus's record (minimal_fixes.json) marks it verified: correct and
        at least the gate's share of the reference's speed. None otherwise (the task's repairs are then
        unscored); ``fix_target`` says why."""
        return self.fix_target().source

    def fix_target(self) -> fixes.FixTarget:
        """The scoring target of edit precision and bug recall, or why there is none."""
        return fixes.target(self.corpus_root, self.id, self.broken_start())

    def error_log(self) -> str | None:
        if self.error_log_path is None or not self.error_log_path.is_file():
            return None
        return self.error_log_path.read_text(encoding="utf-8", errors="replace")

    def ref(self) -> TaskRef:
        """The self-contained description saved in a session header."""
        code = self.broken_start()
        return TaskRef(
            id=self.id,
            family=self.family,
            label=self.label,
            corpus=str(self.corpus_root),
            layout=self.layout,
            solution_file=self.solution_file,
            language=self.language,
            broken_start=code,
            reference=self.reference(),
            broken_start_hash=hashlib.sha256(code.encode()).hexdigest()[:16],
            harness_hash=self.harness_hash(),
        )

    def harness_hash(self) -> str | None:
        """sha256 over the harness files (corpus/harness.py); None when they cannot be read."""
        from beavertui.engine.corpus.harness import harness_hash

        try:
            return harness_hash(self)
        except OSError:
            return None
