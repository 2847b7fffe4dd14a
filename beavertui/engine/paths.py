"""Where beavertui keeps what it computes once per machine: baselines, stored verdicts, GPU ceilings,
reference builds, the CUPTI library, start checks."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """~/.cache/beavertui (or $XDG_CACHE_HOME/beavertui)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "beavertui"
