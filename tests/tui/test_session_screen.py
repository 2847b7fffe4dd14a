"""Behaviour of the session screen under Pilot: stepping, mode switches, search, damaged files, follow."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.engine.session.store import SessionWriter, read_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import DATA, SIZE, open_session, wait_for

# 32 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = pytest.mark.slow


def pane(app, name: str) -> str:  # type: ignore[no-untyped-def]
    return app.screen.query_one(f"#{name}").text


async def test_opens_on_last_iteration_and_steps() -> None:
    app = open_session("degenerate")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.view.cursor == 4
        await pilot.press("home")
        assert screen.view.cursor == 1
        await pilot.press("right")
        assert screen.view.cursor == 2
        await pilot.press("right", "right", "right")
        assert screen.view.cursor == 4  # stops at the last recorded iteration
        await pilot.press("left")
        assert screen.view.cursor == 3
        await pilot.press("h")
        assert screen.view.cursor == 2
        await pilot.press("end")
        assert screen.view.cursor == 4


async def test_collapse_is_found_with_the_keyboard() -> None:
    """The degenerate repair: stepping from the start shows the speedup collapse at iteration 2 and its diff."""
    app = open_session("degenerate")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home", "right")
        await pilot.pause()
        assert "iteration 2/5" in app.screen.query_one("#header").render().plain
        speed = pane(app, "speedup")
        assert "0.08x" in speed
        assert "BELOW GATE" in speed
        diff = pane(app, "diff")
        assert "iteration 2 against iteration 1" in diff
        assert "+  5 │ __global__ void sgemm_naive" in diff
        assert "-  8 │     __shared__ float As[TILE][TILE];" in diff
        log = pane(app, "log")
        assert "FAILED: BELOW GATE" in log
        assert "speedup 0.08x < gate 0.7x" in log


async def test_diff_modes_cycle() -> None:
    app = open_session("degenerate")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home", "right")
        titles = []
        texts = []
        for _ in range(4):
            await pilot.press("d")
            await pilot.pause()
            titles.append(app.screen.query_one("#diff").border_title)
            texts.append(pane(app, "diff"))
        assert titles == [
            "Diff · vs broken start",
            "Diff · vs reference",
            "Diff · whole file",
            "Diff · vs previous attempt",
        ]
        assert "against broken start" in texts[0]
        assert "sgemm_regblock" in texts[1]  # the reference's kernel is on the removed side
        assert texts[2].splitlines()[1].startswith(" 1 │ // kernel.cu")
        assert app.screen.view.diff_mode == "previous"


async def test_raw_log_and_sanitizer_tools() -> None:
    app = open_session("degenerate")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home")
        await pilot.pause()
        classified = pane(app, "log")
        assert "ILLEGAL MEMORY ACCESS" in classified
        assert "signature Invalid __global__ read of size <N> bytes" in classified
        assert "ERROR SUMMARY" not in classified
        await pilot.press("r")
        await pilot.pause()
        raw = pane(app, "log")
        assert app.screen.query_one("#log").border_title == "Raw log"
        assert "ERROR SUMMARY: 3 errors" in raw
        assert "compute-sanitizer --tool memcheck" in raw
        san = pane(app, "sanitizer")
        assert "Invalid __global__ read of size 4 ×3" in san
        assert "(0,24,0)" in san and "(31,62,0)" in san and "0x7f3a2fd09024" in san
        await pilot.press("s")  # memcheck only
        await pilot.pause()
        assert "×3" in pane(app, "sanitizer")
        await pilot.press("s")  # racecheck
        await pilot.pause()
        assert "No racecheck run on iteration 1 (ran: memcheck" in pane(app, "sanitizer")


async def test_stagnation_pane_shows_fired_detector_only_from_its_iteration() -> None:
    app = open_session("stuck")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = pane(app, "stagnation")
        assert "✖ duplicate_code" in text and "fired after it3: same code as iteration 2" in text
        assert "=it2" in text  # iteration 3's hash equals iteration 2's
        await pilot.press("left")
        await pilot.pause()
        text = pane(app, "stagnation")
        assert "✖" not in text
        assert "● duplicate_code" in text


async def test_search_jumps_to_matching_iteration() -> None:
    app = open_session("degenerate")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home", "slash")
        await pilot.press(*"TILE_K")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.view.cursor == 3
        assert app.screen.view.search == "TILE_K"
        await pilot.press("n")  # iteration 4's reply mentions the fix of TILE_K
        assert app.screen.view.cursor == 4
        await pilot.press("n")  # wraps around past iterations 1 and 2, which never mention it
        assert app.screen.view.cursor == 3
        await pilot.press("N")
        assert app.screen.view.cursor == 4
        await pilot.press("slash", *"no-such", "enter")
        await pilot.pause()
        assert app.screen.view.cursor == 4  # no match: the cursor stays


async def test_next_match_before_any_search_says_how_to_search() -> None:
    """Before: n and N before any search did nothing at all."""
    app = open_session("degenerate")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home", "n", "N")
        await pilot.pause()
        assert app.screen.view.cursor == 1
        notes = [str(n.message) for n in app._notifications]
        assert notes == ["no search yet: press / and type what to find, then n / N"] * 2


async def test_damaged_file_shows_valid_prefix_and_problem() -> None:
    app = open_session("damaged")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        head = app.screen.query_one("#header").render().plain
        assert "damaged file: truncated last line (line 13)" in head
        assert app.screen.view.state.events == 11
        assert app.screen.view.cursor == 2


async def test_help_and_palette_commands() -> None:
    app = open_session("quick")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for name in (
            "Back",
            "Forward",
            "First",
            "Last",
            "Diff mode",
            "Raw log",
            "Sanitizer tool",
            "Search",
            "Help",
        ):
            assert name in titles


async def test_follow_mode_picks_up_appended_events(tmp_path: Path) -> None:
    header, events, _ = read_session(DATA / "degenerate.jsonl")
    assert header is not None
    path = tmp_path / "growing.jsonl"
    writer = SessionWriter(path, header)
    starts = [i for i, e in enumerate(events) if e.kind == "request"]
    first = events[: starts[1]]  # iteration 1 complete
    for e in first:
        writer.append(e)
    app = BeaverApp(lambda: SessionScreen(header, first, follow=path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.view.cursor == 1 and screen.view.following
        for e in events[starts[1] : starts[2]]:
            writer.append(e)
        await wait_for(
            pilot, lambda: screen.view.state.iteration == 2 and screen.view.attempt.verdict is not None
        )
        assert screen.view.cursor == 2
        await pilot.press("home")  # stepping away pins the cursor
        for e in events[starts[2] :]:
            writer.append(e)
        writer.close()
        await wait_for(pilot, lambda: screen.view.state.end is not None)
        assert screen.view.cursor == 1
        assert len(screen.view.state.verdicts) == 4
        assert not screen.view.following


async def test_search_shows_the_matching_line_of_the_code() -> None:
    """A match in the code switched the diff to the whole file and left it at line 1: in this H200 session
    the kernel that the query names starts at line 86 of 151, out of sight. The pane now scrolls to it."""
    path = DATA.parent / "h200_batch_run" / "scripted_alternate" / "iterative-K5-L3-H2-T0-p0.7-bd892733"
    header, events, problem = read_session(path / "scan_01__s0.jsonl")
    assert header is not None
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("home", "slash", *"scan_tiles_kernel", "enter")
        await pilot.pause()
        diff = app.screen.query_one("#diff")
        assert app.screen.view.diff_mode == "file"
        shown = [diff.render_line(y).text for y in range(diff.scrollable_content_region.height)]
        assert diff.scroll_y > 0 and any("scan_tiles_kernel" in line for line in shown), shown
