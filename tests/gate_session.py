"""A real session that failed the speed gate: `live` with the paper's protocol (the gate applied after the
run, so the loop stops at the first correct attempt), the scripted model and the recorded toolchain. Its
second attempt is correct at 0.02x against a gate of 0.7x, so the loop's stop reason is ``passed`` and the
session is no success. The views must show it as a failure."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDED = f"recorded:{CORPUS / 'vec_scale.recordings.jsonl'}"
LIVE = ["live", "--corpus", str(CORPUS), "--task", "vec_scale", "--model", "scripted:vec_scale_demo.toml"]


def gate_failure(folder: Path) -> Path:
    """Write the session into ``folder`` (as ``gate_failure.jsonl``) and return its path."""
    from beavertui.cli import main

    out = folder / "gate_failure.jsonl"
    assert main([*LIVE, "--toolchain", RECORDED, "--out", str(out), "--headless"]) in (0, 1)
    end = json.loads(out.read_text().splitlines()[-1])
    assert (end["kind"], end["stop_reason"], end["success"]) == ("end", "passed", False)
    assert end["best_speedup"] < 0.7
    return out
