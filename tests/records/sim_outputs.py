"""The raw outputs of the release batch's simulations (`bench/batch_bench.py lane --stages release --json`)
that the lab's simulation pages quote, read back the same way by each page's records test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def flat(path: Path) -> str:
    """A document, its white space made single spaces (its lines are wrapped)."""
    return " ".join(path.read_text(encoding="utf-8").split())


def run(data: Path, name: str) -> dict[str, Any]:
    """One simulated run's output, ``<data>/<name>.json``."""
    return dict(json.loads((data / f"{name}.json").read_text(encoding="utf-8")))


def wait(design: dict[str, Any]) -> float:
    """A design's longest wait for timing with no timing stage running, in seconds."""
    return float(design["sessions"]["longest_wait_without_timing_s"])


def check_release_run(result: dict[str, Any], gpus: int) -> None:
    """The run drove the release's recorded stages (65 tasks, K = 2, each timing stage as timed alone) on
    ``gpus`` GPUs, and both designs finished every session, the lane appending every timing."""
    assert (result["stages"], result["gpus"], result["tasks"], result["iterations"]) == (
        "release",
        gpus,
        65,
        2,
    )
    assert result["timing_stages_from"] == {"alone": 65, "batch": 0, "median": 0}
    for design in ("inline", "lane"):
        d = result[design]
        assert (d["attempts"], d["passed"], d["sessions"]["final"]) == (130, 65, 65)
    assert result["lane"]["lane"] == {"appended": 65, "failed": 0}


def two_gpus_over_one(data: Path, side: str, x: str) -> float:
    """Run ``x`` of ``side`` (``<side>-gpus1-<x>`` and ``<side>-gpus2-<x>``): how many times sooner two GPUs
    were final than one with the timing lane, to two places."""
    one, two = (run(data, f"{side}-gpus{g}-{x}")["result"]["lane"]["sim_wall_s"] for g in (1, 2))
    return round(one / two, 2)


def release_stages() -> dict[Any, dict[str, Any]]:
    """The recorded H200 release batch's stage times per task, as bench/batch_bench.py reads them for the
    simulation (``release_stages`` over its run archive)."""
    import sys
    import tarfile
    import tempfile

    bench = Path(__file__).resolve().parents[2] / "bench"
    sys.path.insert(0, str(bench))
    try:
        import batch_bench
    finally:
        sys.path.remove(str(bench))
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(batch_bench.RELEASE_RUN) as tar:
        tar.extractall(tmp, filter="data")
        _ids, stages, _ = batch_bench.release_stages(Path(tmp) / "sessions" / "lane")
    return dict(stages)
