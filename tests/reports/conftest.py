"""Fixtures of the report tests."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from beavertui.cli import main

ROOT = Path(__file__).resolve().parents[2]
FULL_RUN = ROOT / "tests" / "data" / "h200_batch_run_40.tar.gz"


@pytest.fixture(scope="session")
def exported_run40(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The bundled 40-task H200 batch run unpacked, and its page as ``beavertui export --html`` writes it:
    (run folder, page). Made once a test process (test_html_export.py reads the page, test_html_browser.py
    opens it); the tests only read both."""
    root = tmp_path_factory.mktemp("run40")
    with tarfile.open(FULL_RUN) as tar:
        tar.extractall(root, filter="data")
    page = root / "run.html"
    assert main(["export", str(root / "run"), "--html", "-o", str(page)]) == 0
    return root / "run", page
