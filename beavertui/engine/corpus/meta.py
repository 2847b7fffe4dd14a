"""The metadata files of a task (input.json, instance.json) as pydantic models (docs/format.md, Tasks).

Both corpus layouts share these models; fields the release adds are optional. Parsing only: corpus.py
decides what a model means for a Task.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Hardware(BaseModel):
    model_config = ConfigDict(extra="ignore")
    min_sm: int | None = None
    """Lowest compute capability, e.g. 80."""
    required_features: list[str] = []
    """Feature names the task needs (e.g. ``wgmma``)."""


class StageTimeouts(BaseModel):
    model_config = ConfigDict(extra="ignore")
    build_s: float = 300.0
    """Build stage limit, seconds."""
    run_s: float = 120.0
    """Test stage limit, seconds."""


class Work(BaseModel):
    model_config = ConfigDict(extra="ignore")
    flop: float | None = None
    """FLOPs of one timed call."""
    bytes: float | None = None
    """Minimal bytes moved by one timed call."""


class TimingDriverMeta(BaseModel):
    """input.json ``timing_driver``: how reference and candidate are timed in one process (docs/timing.md)."""

    model_config = ConfigDict(extra="ignore")
    library_command: str
    """Builds the solution in a work dir as a side library (a shared object exporting the entry point)."""
    library: str = "solution.so"
    """The file library_command writes, relative to the work dir."""
    driver_command: str
    """Builds the timing driver in the reference's work dir (once per task, harness and toolkit)."""
    driver: str = "timing.out"
    """The file driver_command writes, relative to the work dir."""
    driver_args: str = ""
    """Arguments of every driver run (e.g. ``--bench 20``); the engine adds the libraries and the rounds."""
    folder: str = "_timing"
    """The corpus folder (beside ``_common``) copied into a work dir, under the same name, before either
    build: the timing sources. They are not part of the correctness harness (its hash leaves them out)."""


class InputMeta(BaseModel):
    """input.json: the build/test contract."""

    model_config = ConfigDict(extra="ignore")
    task_id: str
    """Task id."""
    schema_version: int | str = 2
    """Schema version (2)."""
    build_command: str
    """Shell command that builds the candidate in the work dir."""
    test_command: str
    """Shell command whose exit status 0 means the candidate is correct."""
    solution_file: str
    """Path of the solution inside the work dir."""
    tags: list[str] = []
    """Free tags."""
    benchmark_command: str | None = None
    """Native timing contract command (prints BEAVER_TIME_MS lines)."""
    timing_driver: TimingDriverMeta | None = None
    """In-process timing of reference and candidate (native corpus); None: the benchmark_command contract."""
    hardware: Hardware | None = None
    """Hardware requirements."""
    timeouts: StageTimeouts | None = None
    """Per-stage time limits."""
    work: Work | None = None
    """Work of one timed call."""
    level: str | None = None
    """Release level (e.g. ``applied_kernels_class``)."""
    has_thunderkittens: bool = False
    """Release: the task needs the bundled ThunderKittens."""


class InstanceMeta(BaseModel):
    """instance.json: the task's metadata."""

    model_config = ConfigDict(extra="ignore")
    id: str
    """Task id, equal to the folder name."""
    task_family: str
    """Kernel family."""
    error_category: str
    """Label of the broken start."""
    difficulty: str | None = None
    """easy, medium or hard."""
    upstream_library: str | None = None
    """Upstream library, if any."""
    broken_start_provenance: str | None = None
    """Where the broken start came from."""
    source_model: str | None = None
    """Model that produced the broken start (native)."""
    broken_start_hash: str | None = None
    """First 16 hex digits of sha256 of the broken start."""
    files: dict[str, str] | None = None
    """Release: names of the task's files."""
