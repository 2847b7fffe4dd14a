"""The analysis pane's feature table names each side's library calls.

Before: its "library calls" row filled the candidate's column only, so on an H200 release session whose
first attempt is its broken start unchanged ("no change: the two files are identical") the table read as
if the broken start and the reference called no library and the candidate did.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

from beavertui.engine.session.store import read_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import SIZE

ARCHIVE = Path(__file__).resolve().parents[1] / "data" / "release_batch_final.tar.gz"
SESSION = "cublas_applications_154__compile_error__83af4bad__s0.jsonl"


async def test_library_calls_are_listed_for_every_side(tmp_path: Path) -> None:
    with tarfile.open(ARCHIVE) as tar:
        (member,) = [m for m in tar.getmembers() if m.name.endswith(SESSION)]
        tar.extractall(tmp_path, members=[member], filter="data")
    header, events, problem = read_session(tmp_path / member.name)
    assert header is not None
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home", "a")
        await pilot.pause()
        assert "no change: the two files are identical" in app.screen.query_one("#diff").text  # type: ignore[attr-defined]
        text = app.screen.query_one("#analysis").text  # type: ignore[attr-defined]
        (row,) = [line for line in text.splitlines() if line.startswith("library calls")]
        sides = re.split(r"\s{2,}", row.strip())[1:]
        assert len(sides) == 3 and sides[0] == sides[1] == sides[2], row
        assert sides[0].startswith("cublasDdot, cublasDgemv, cublasDaxpy")
