"""The analysis beside the rates (edit precision, bug recall, degeneration by the code) scores the sessions
the rates score, and no other: on the H100 release run with the timing lane (docs/data/h100-2026-12-05-late),
stopped with 26 sessions unfinished and 3 with a timing pending, the rates count 45 tasks, and so does the
analysis; asked to include the unfinished, both take them in."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from beavertui.engine.analysis.report import run_summary
from beavertui.service.metrics import compute

ROOT = Path(__file__).resolve().parents[2]
LANE = ROOT / "docs" / "data" / "h100-2026-12-05-late" / "release-lane" / "lane-out.tgz"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("lane")
    with tarfile.open(LANE) as tar:
        tar.extractall(dest, filter="data")
    return dest / "sessions" / "lane"


def test_the_analysis_leaves_out_what_the_rates_leave_out(run: Path) -> None:
    report = compute(run, None)
    assert (
        report.stats is not None
        and report.stats.timings_pending == 3
        and report.stats.unfinished_sessions == 26
    )
    (group,) = report.groups
    assert group.n_tasks == 45
    assert report.cells is not None
    ((_key, cells),) = report.cells.items()
    assert cells.analysed_repairs == 45  # one repair a task; the 3 pending ones are left out
    (summary,) = run_summary(run).values()
    assert summary["analysed_repairs"] == 45


def test_with_the_unfinished_included_both_take_them_in(run: Path) -> None:
    report = compute(run, None, include_unfinished=True)
    (group,) = report.groups
    assert group.n_tasks == 55
    assert report.cells is not None
    ((_key, cells),) = report.cells.items()
    assert cells.analysed_repairs == 48
