"""The HTML export shows a session that failed the speed gate as a failure: the session page's header and
badge, and the run page's list of sessions. The session is a real one (tests/gate_session.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.cli import main
from tests.gate_session import gate_failure
from tests.reports.test_html_export import unpack


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gate_failure(tmp_path_factory.mktemp("gate"))


def export(source: Path, out: Path) -> str:
    assert main(["export", str(source), "--html", "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_session_page(session: Path, tmp_path: Path) -> None:
    page = export(session, tmp_path / "s.html")
    assert '<span class="red">· ended: failed gate after 2, best 0.02x &lt; gate 0.70x</span>' in page
    assert "ended: passed" not in page
    assert "FAILED: BELOW GATE" in page and "PASSED · BELOW GATE" not in page


def test_run_page(session: Path, tmp_path: Path) -> None:
    page = export(session.parent, tmp_path / "run.html")
    assert '<td class="red">failed gate</td>' in page and ">passed</td>" not in page
    (packed,) = unpack(page).values()
    assert "ended: failed gate after 2" in packed and "ended: passed" not in packed
