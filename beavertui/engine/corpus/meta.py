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
