"""Every table `metrics` prints says under it what its numbers are: its own note, beyond the lines every
table carries (what the source left out). The breakdowns (--by) and the Kendall table printed none."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.reports.cells import Rate
from beavertui.service.metrics import compute, with_tables

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("source", ["sessions/demo", "tests/data/h200_batch_run"])
def test_every_table_has_a_note_of_its_own(source: str) -> None:
    report = compute(ROOT / source)
    shared = set(report.notes())
    seen = set()
    for paper in (False, True):
        with_tables(report, by=["family", "category", "observed"], paper=paper, resamples=50)
        for t in report.tables:
            seen.add(t.slug)
            own = [line for line in t.note.split("\n") if line.strip() and line not in shared]
            assert own, f"{t.slug}: no note of its own"
            rates = [c for row in t.rows for c in row if isinstance(c, Rate)]
            if rates:  # a percentage: of what, and where an interval is printed, which one
                assert "ercent" in " ".join(own), t.slug
            if any(r.lo is not None for r in rates):
                assert "bootstrap" in " ".join(own), t.slug
    assert {"by_family", "by_category", "by_observed_category"} <= seen
    if source == "sessions/demo":
        assert "kendall" in seen
        kendall = next(t for t in with_tables(report, resamples=50).tables if t.slug == "kendall")
        assert "two-sided p-value" in kendall.note and "-: undefined" in kendall.note
