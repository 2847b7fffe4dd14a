"""The self-source rule on a recorded H200 run: the group says how many tasks it scored at K - 1.

tests/data/h200_batch_run_40.tar.gz is a K = 5 run of scripted:@alternate (the broken start at odd
iterations, the reference at even ones) over 40 tasks. A side table that names the model as the maker of
two tasks' broken starts scores those two at K - 1 = 4 iterations; ``k`` stays the protocol's K, so
without a count the JSON gave no sign that any task was scored at 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beavertui.cli import main
from tests.conftest import extract_run

ROOT = Path(__file__).resolve().parents[2]
FULL_RUN = ROOT / "tests" / "data" / "h200_batch_run_40.tar.gz"


def _group(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(argv) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    return group  # type: ignore[no-any-return]


def test_the_group_counts_the_tasks_scored_at_k_minus_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = extract_run(FULL_RUN, tmp_path)
    plain = _group(["metrics", str(run), "--json"], capsys)
    assert (plain["k"], plain["n_tasks"], plain["n_self_source"]) == (5, 40, 0)

    side = tmp_path / "side.json"
    side.write_text(json.dumps({"gemm_tc_03": "scripted:@alternate", "scan_00": "scripted:@alternate"}))
    marked = _group(["metrics", str(run), "--json", "--source-models", str(side)], capsys)
    assert (marked["k"], marked["n_tasks"], marked["n_self_source"]) == (5, 40, 2)

    side.write_text(json.dumps({"gemm_tc_03": "another-model"}))
    other = _group(["metrics", str(run), "--json", "--source-models", str(side)], capsys)
    assert other["n_self_source"] == 0
