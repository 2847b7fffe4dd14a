"""The HTML export of a planned session carries the plan tab (tests/data/planning/sessions)."""

from __future__ import annotations

from pathlib import Path

from beavertui.cli import main

ARMS = Path(__file__).resolve().parents[1] / "data" / "planning" / "sessions"


def test_the_html_export_has_the_plan_tab(tmp_path: Path) -> None:
    out = tmp_path / "s.html"
    assert main(["export", str(ARMS / "plan-f-summary.jsonl"), "--html", "-o", str(out)]) == 0
    page = out.read_text()
    assert '<button class="mode" data-diff="plan">' in page and 'data-dm="plan"' in page
    assert "plan for iteration 3 by scripted:planner.toml" in page
    assert "Use __syncthreads(); nothing else changes." in page
    implicit = tmp_path / "i.html"
    assert main(["export", str(ARMS / "implicit.jsonl"), "--html", "-o", str(implicit)]) == 0
    assert '<button class="mode" data-diff="plan">' not in implicit.read_text()
