"""The HTML export of a planned session carries the plan tab (tests/data/planning/sessions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.cli import main
from tests.chromium import Browser
from tests.reports.test_html_browser import assert_clean, browser, export, load, visible

__all__ = ["browser"]  # the module's Chromium, as a fixture here

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


@pytest.mark.slow
def test_the_plan_button_shows_the_plan_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    page = export(ARMS / "plan-f-summary.jsonl", tmp_path / "page.html")
    load(browser, page)
    browser.click('[data-step="first"]')
    assert "plan for iteration 1" not in visible(browser, "p-diff")
    browser.click('[data-diff="plan"]')
    shown = visible(browser, "p-diff")
    assert "plan for iteration 1 by scripted:planner.toml" in shown and "against" not in shown
    assert "abs errors 0.28 to 0.97" in shown  # the summary of this attempt's feedback
    browser.click('[data-step="1"]')
    assert "plan for iteration 2" in visible(browser, "p-diff")
    browser.click('[data-diff="previous"]')
    assert "plan for iteration" not in visible(browser, "p-diff")
    assert_clean(browser, page)
