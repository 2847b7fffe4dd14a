"""The analysis in the TUI: the per-attempt analysis pane, a branch next to its parent, starting a branch
from the cursor, and the attribution screen over a saved attribution run.

Branches run the real loop with a scripted model and recorded outcomes of the tiled-transpose fixture
(tests/engine/analysis/test_analysis_branch.py), so the sessions shown are written exactly as `beavertui branch` writes them.
"""

from __future__ import annotations

import json
from pathlib import Path

from beavertui.cli import main
from beavertui.engine.session.store import read_session
from beavertui.tui.analysis import AttributionScreen, BranchScreen, run_branch
from beavertui.tui.app import BeaverApp
from beavertui.tui.compare import CompareScreen
from beavertui.tui.session_screen import SessionScreen
from tests.engine.analysis.test_analysis_attribute import _recordings_file
from tests.engine.analysis.test_analysis_branch import REFERENCE, parent_session, reply
from tests.tui.conftest import DATA, SIZE, open_session, wait_for


def open_file(path: Path, **kw: object) -> BeaverApp:
    header, events, problem = read_session(path)
    assert header is not None
    return BeaverApp(lambda: SessionScreen(header, events, problem=problem, path=path, **kw))  # type: ignore[arg-type]


def fixtures(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A failed parent session (budget 2), a script that repairs, and the recorded outcomes."""
    parent = parent_session(tmp_path)
    script = tmp_path / "fix.json"
    script.write_text(json.dumps([reply(REFERENCE)]))
    return parent, script, _recordings_file(tmp_path / "rec.jsonl")


async def test_analysis_pane_per_attempt() -> None:
    header, _events, _ = read_session(DATA / "degenerate.jsonl")
    assert header is not None and header.task.reference is not None
    app = open_session("degenerate")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        pane = screen.query_one("#analysis")
        assert not pane.display  # hidden until asked for: the default layout is unchanged
        await pilot.press("a")
        await pilot.pause()
        assert pane.display and not screen.query_one("#right").display
        await pilot.press("end")
        await pilot.pause()
        text = pane.text
        # this session's task has no verified minimal fix to score against, so its edits are unscored
        # (never scored against the reference's whole diff)
        assert "edit unscored: no verified minimal fix" in text
        assert "no feature of the reference lost" in text
        await pilot.press("left", "left")  # iteration 2: a correct repair that dropped the tiling
        await pilot.pause()
        text = pane.text
        assert "degenerate: lost shared_memory, barriers" in text
        assert "shared_memory" in text and "LOST" in text
        per_attempt = text[text.index("per attempt") :].splitlines()
        assert per_attempt[2].split()[:3] == ["1", "-", "-"]  # a failed attempt is not scored
        assert per_attempt[3].split()[0] == "2" and "(degenerate)" in per_attempt[3]
        await pilot.press("a")
        await pilot.pause()
        assert not pane.display and screen.query_one("#right").display


async def test_branch_next_to_its_parent(tmp_path: Path) -> None:
    parent, script, rec = fixtures(tmp_path)
    branch = run_branch(
        parent,
        1,
        {"feedback": "L1", "model": f"scripted:{script}", "recorded": str(rec)},
        tmp_path / "branch.jsonl",
    )
    app = open_file(branch)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.branch_step == 1 and screen.cursor == 2
        assert screen.a.header.session_id != screen.b.header.session_id
        assert screen.b.header.parent == str(parent)
        header = screen.query_one("#compare-header").render()
        assert "branch of A after step 1" in str(header)
        assert (screen.b.end.stop_reason, screen.b.end.success) == ("passed", True)


async def test_compare_parent_of_a_plain_session_warns() -> None:
    app = open_session("quick")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)


async def test_start_a_branch_from_the_cursor(tmp_path: Path) -> None:
    parent, script, rec = fixtures(tmp_path)
    out = tmp_path / "branches"
    app = open_file(parent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.branch_dir = out  # type: ignore[attr-defined]
        await pilot.press("end", "b")
        await wait_for(pilot, lambda: isinstance(app.screen, BranchScreen))
        dialog = app.screen
        assert dialog.step == 2  # type: ignore[attr-defined]
        dialog.query_one("#branch-model").value = f"scripted:{script}"
        dialog.query_one("#branch-recorded").value = str(rec)
        dialog.query_one("#branch-feedback").value = "L1"
        await pilot.click("#branch-start")
        # The parent's budget (2) leaves no iteration after step 2: one clear line, the dialog stays.
        status = dialog.query_one("#branch-status")
        await wait_for(pilot, lambda: "leaves no iteration" in str(status.render()))
        budget = dialog.query_one("#branch-budget")
        budget.value = "3"
        budget.focus()
        await pilot.press("enter")  # enter in any field starts the branch too
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        compare = app.screen
        assert compare.branch_step == 2  # type: ignore[attr-defined]
    (written,) = sorted(out.glob("*.jsonl"))
    header, events, problem = read_session(written)
    assert problem is None and header is not None
    assert (header.parent, header.branch_step, header.protocol.feedback) == (str(parent), 2, "L1")
    assert header.protocol.budget == 3 and events[-1].kind == "end" and events[-1].success  # type: ignore[union-attr]


async def test_attribution_screen_from_a_session(tmp_path: Path) -> None:
    parent, script, rec = fixtures(tmp_path)
    args = ["--model", f"scripted:{script}", "--recorded", str(rec), "--out", str(tmp_path / "attribution")]
    assert (
        main(
            ["attribute", str(parent), "--at", "1", "--components", "runtime,timing", "--samples", "1", *args]
        )
        == 0
    )
    saved = tmp_path / "attribution" / f"attribution-{parent.stem}-at1.json"
    assert saved.is_file()
    app = open_file(parent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, AttributionScreen))
        screen = app.screen
        assert len(screen.query(".attribution-run")) == 1
        text = screen.text  # type: ignore[attr-defined]
        for needle in ("outcome: correct", "outcome: passed", "Shapley", "Banzhaf", "runtime×timing"):
            assert needle in text, needle
        assert "+1.00 [+1.00, +1.00]" not in text  # the scripted repair ignores the feedback: zeros
        rows = [line.split() for line in text.splitlines() if line.startswith("runtime ")]
        assert rows and all(r[1:] == ["+0.00", "[+0.00,", "+0.00]"] * 2 for r in rows)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)


def test_attribute_show_prints_a_saved_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    parent, script, rec = fixtures(tmp_path)
    args = ["--model", f"scripted:{script}", "--recorded", str(rec), "--out", str(tmp_path / "a"), "--json"]
    assert (
        main(["attribute", str(parent), "--at", "2", "--components", "sanitizer", "--samples", "1", *args])
        == 0
    )
    capsys.readouterr()
    assert main(["attribute", "--show", str(tmp_path / "a" / f"attribution-{parent.stem}-at2.json")]) == 0
    out = capsys.readouterr().out
    assert "outcome: passed (1 step(s), 2 branches, 95% CI)" in out and "sanitizer" in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"measures": {"passed": {"components": ["x"]}}}')
    assert main(["attribute", "--show", str(bad)]) == 2
    assert "damaged attribution file" in capsys.readouterr().err


def test_compare_command_marks_the_frozen_prefix(tmp_path: Path) -> None:
    from tests.tui.test_compare_and_cli import cli

    parent, script, rec = fixtures(tmp_path)
    branch = run_branch(
        parent, 1, {"model": f"scripted:{script}", "recorded": str(rec)}, tmp_path / "b.jsonl"
    )
    out = cli("compare", str(parent), str(branch)).stdout
    assert out.startswith("B is a branch of A after step 1")
    rows = [line for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert rows[0].rstrip().endswith("frozen") and "frozen" not in rows[1]
    plain = cli("compare", str(branch), str(parent)).stdout  # A is not B's parent this way round
    assert "frozen" not in plain and not plain.startswith("B is a branch")


async def test_the_branch_dialog_fits_a_small_terminal(tmp_path: Path) -> None:
    """At 80x24 the dialog kept its 100 columns: its right border and the right of every input were off
    the screen. It takes the screen's width there, and scrolls where its rows do not fit."""
    from textual.geometry import Region

    parent, _script, _rec = fixtures(tmp_path)
    app = open_file(parent)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("end", "b")
        await wait_for(pilot, lambda: isinstance(app.screen, BranchScreen))
        await pilot.pause()
        screen = Region(0, 0, 80, 24)
        assert screen.contains_region(app.screen.query_one("#branch-dialog").region)
        for key in ("feedback", "recorded"):
            assert screen.contains_region(app.screen.query_one(f"#branch-{key}").region)
