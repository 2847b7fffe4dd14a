"""An attempts table holds only values a run can produce; anything else is one line, not a number used.

Before, a table with sample 10^30, gate NaN, budget 0, iteration 10^6 or speedup -2 was read and scored
(or gave a traceback). Each is now refused where the table is read, with the row and the value.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """``beavertui export`` of the demo sessions, once for the module (each test edits a copy)."""
    out = tmp_path_factory.mktemp("table") / "t.jsonl"
    run_cli("export", ROOT / "sessions" / "demo", "-o", out, check=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


CASES = {
    "sample-1e30": (("sample",), 10**30),
    "sample-negative": (("sample",), -1),
    "iteration-1e6": (("iteration",), 10**6),
    "speedup-negative": (("speedup",), -2.0),
    "speedup-zero": (("speedup",), 0.0),
    "gate-nan": (("protocol", "gate"), "NaN"),
    "gate-large": (("protocol", "gate"), 50.0),
    "budget-0": (("protocol", "budget"), 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_attempts_table_value_out_of_range_is_one_line(
    tmp_path: Path, case: str, exported: list[dict[str, Any]]
) -> None:
    rows = copy.deepcopy(exported)
    path, value = CASES[case]
    target = rows[-1]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(r).replace('"NaN"', "NaN") for r in rows) + "\n")
    if case == next(iter(CASES)):  # one case through the real entry point
        p = subprocess.run(
            [sys.executable, "-m", "beavertui", "metrics", str(bad), "--json"],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    else:
        p = run_cli("metrics", bad, "--json")
    assert p.returncode == 2, (p.returncode, p.stdout[-300:], p.stderr[-500:])
    assert "Traceback" not in p.stderr
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("beavertui: ") and str(bad) in line, line
    assert "out of range" in line or "too large" in line or "finite" in line, line
