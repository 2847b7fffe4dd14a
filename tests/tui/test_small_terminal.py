"""The screens on a small terminal (80x24): everything readable, every key told.

Before: at 80x24 the help box kept its 110x34 size, so its right side and its last ten lines were off the
screen with no way to scroll to them; the session screen's bottom row of panes kept 13 lines, leaving the
Diff pane three lines of code; and the browser's keys 9 (cost) and 0 (file) sorted without being named in
the help, which said 1-8. The compare screen's header wrapped side A's line at 80 columns and pushed side B's off.
"""

from __future__ import annotations

from pathlib import Path

from textual.geometry import Region

from beavertui.commands.compare import load
from beavertui.engine.session.store import read_session as load_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import BrowserScreen
from beavertui.tui.compare import CompareScreen
from beavertui.tui.help import HELP, HelpScreen
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import open_session, wait_for

SMALL = (80, 24)
DEMO = Path(__file__).resolve().parents[2] / "sessions" / "demo"


def screen_text(app: BeaverApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_the_help_fits_a_small_terminal_and_scrolls_to_its_end() -> None:
    app = open_session("quick")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        box = app.screen.query_one("#help")
        assert Region(0, 0, *SMALL).contains_region(box.region), box.region
        assert "Session screen" in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert "stop (asks first)" in screen_text(app)  # the last line of the help


async def test_the_diff_keeps_room_on_a_small_terminal() -> None:
    app = open_session("degenerate")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        assert app.screen.query_one("#diff").region.height >= 8
        assert app.screen.query_one("#bottom").region.height >= 8  # speedup and stagnation still show


async def test_the_bottom_row_keeps_its_height_on_a_large_terminal() -> None:
    app = open_session("degenerate")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.screen.query_one("#bottom").region.height == 13


def test_the_help_names_every_sort_key_of_the_browser() -> None:
    words = {"iterations": "iterations", "best": "best speedup", "stop": "stop reason"}
    sorts = {
        b.key: b.action[len("sort('") : -2] for b in BrowserScreen.BINDINGS if b.action.startswith("sort(")
    }
    assert sorted(sorts) == sorted("1234567890")
    browser = " ".join(HELP.split("[b]Browser[/b]")[1].split("[b]Compare[/b]")[0].split())
    told = browser.split("1-9 sort by ")[1].split(";")[0].split(", ")
    assert told == [words.get(sorts[k], sorts[k]) for k in "123456789"]
    assert f"0 by {sorts['0']}" in browser


async def test_a_browser_key_sorts_as_the_help_says(run_dir: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        for key, column in (("9", "cost"), ("0", "file")):
            await pilot.press(key)
            assert app.screen.sort_column == column


async def test_the_compare_header_names_both_sides_at_80_columns() -> None:
    a, b = load(DEMO / "repair_in_three.jsonl"), load(DEMO / "typo_then_barrier.jsonl")
    app = BeaverApp(lambda: CompareScreen(a, b))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("right")
        lines = screen_text(app).splitlines()
        assert lines[1].startswith(" A  scripted:repair_in_three.toml · "), lines[:3]
        assert lines[2].startswith(" B  scripted:typo_then_barrier.toml · "), lines[:3]
        assert lines[1].rstrip().endswith("…")  # cut, said so


def _long_session(tmp_path: Path) -> Path:
    """A session of budget 12, recorded by ``live`` on the demo's outcomes: four judged attempts (the
    script holds four replies), then a fifth cut at its request."""
    from beavertui.cli import main

    out = tmp_path / "k12.jsonl"
    main(["live", "--task", "transpose_00", "--model", f"scripted:{DEMO / 'replies' / 'code_cycle.toml'}",
          "--toolchain", "demo", "--unknown-candidates", "fail", "--budget", "12", "--no-stagnation-stop",
          "--headless", "--out", str(out)])  # fmt: skip
    return out


async def test_the_timeline_of_a_long_budget_says_each_number_and_category(tmp_path: Path) -> None:
    """Twelve cells do not fit at 15 columns each in 80: each cell narrows, but keeps its whole number
    (10, 11, 12 once read as 1, 1, 1) and its category in short under it, not in its colour alone."""
    header, events, problem = load_session(_long_session(tmp_path))
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("home")
        await pilot.pause()
        numbers, categories = str(app.screen.query_one("#timeline").render()).splitlines()[1:]
        assert numbers.split() == [str(i) for i in range(1, 13)]
        assert categories.split()[:5] == ["build", "build", "build", "build", "reque"]


async def test_the_header_keeps_the_iteration_and_the_end_at_80_columns(tmp_path: Path) -> None:
    """The first line once ran task, model and protocol whole and cut the rest: at 80 columns the iteration
    and how the session ended fell off (at 100 it read "iteration 2/1"). The model and the protocol give
    way now, each cut with an ellipsis; the task last."""
    header, events, problem = load_session(_long_session(tmp_path))
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("home")
        await pilot.pause()
        top = app.screen.query_one("#header").render().plain.splitlines()[0]
        assert len(top) <= SMALL[0]
        assert top.startswith(
            " transpose_00  scripte… · iterative K12 L3 H4… · iteration 1/12 · ended: error"
        )
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=(160, 24)) as pilot:  # room for every name: nothing is cut
        await pilot.pause()
        assert "scripted:code_cycle.toml · iterative K12 L3 H4 T0.7 p0.7" in str(
            app.screen.query_one("#header").render()
        )


async def test_the_browser_scrolls_to_its_last_columns_on_a_small_terminal(run_dir: Path) -> None:
    """At 80 columns the columns past Outcome (iterations, best speedup, stop reason, category, tokens,
    cost) did not fit, and the table could not scroll to them: its scroll width stayed 0. Right and left
    move a column at a time, the titles with the rows."""
    from beavertui.tui.table import VirtualTable

    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        table = app.screen.query_one("#sessions", VirtualTable)
        titles = app.screen.query_one("#browser-columns")
        assert "Best" not in screen_text(app)
        for _ in range(len(table.columns)):
            await pilot.press("right")
        await pilot.pause()
        assert table.scroll_x == table.max_scroll_x > 0
        shown = screen_text(app)
        assert "Best" in shown and "Cost" in shown and "File" not in shown
        assert str(titles.render()).split()[-2:] == ["Tokens", "Cost"]
        await pilot.press("left")
        await pilot.pause()
        assert 0 < table.scroll_x < table.max_scroll_x
        assert any(str(titles.render()).startswith(f" {c.label} ") for c in table.columns)


async def test_the_speedup_bars_fit_a_small_pane() -> None:
    """The bars across iterations were 30 cells at any width: in the 80-column screen's pane each bar
    wrapped onto a second line, apart from its speedup and the gate, and the two sparklines took two lines
    each. Bars and sparklines now take the room there is, the gate's scale going to a line of its own."""
    app = open_session("degenerate")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("home", "right")
        await pilot.pause()
        pane = app.screen.query_one("#speedup")
        lines = [strip.text.rstrip() for strip in pane._lines]
        width = pane.scrollable_content_region.width
        assert all(len(line) <= width for line in lines)
        chart = lines[lines.index("  it  speedup across iterations") + 1 :]
        assert chart[0].startswith("   1 ") and chart[0].endswith("│ — illegal")
        assert chart[1].startswith("▶  2  █") and chart[1].endswith("│ 0.08x below gate")
        assert chart[3].startswith("   4  ███") and chart[3].endswith(" 0.94x")
        assert chart[4].endswith("└ gate 0.7x") and chart[5].strip() == "scale 0–1.00x"
        assert lines[0].startswith("candidate    10.168 ms") and lines[1].startswith("reference ")


async def test_a_followed_session_says_running_at_80_columns(tmp_path: Path) -> None:
    """`replay --follow` of a session still being written: the header's "running…" was cut to "runn" at
    100 columns and lost at 80; it is kept as the stop reason of an ended session is."""
    from beavertui.engine.session.store import SessionWriter

    header, events, _ = load_session(_long_session(tmp_path))
    assert header is not None
    path = tmp_path / "growing.jsonl"
    with SessionWriter(path, header) as writer:
        for e in events[:3]:
            writer.append(e)
    app = BeaverApp(lambda: SessionScreen(header, events[:3], follow=path))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert app.screen.view.following  # type: ignore[attr-defined]
        top = app.screen.query_one("#header").render().plain.splitlines()[0]
        assert top.startswith(" transpose_00 ") and top.rstrip().endswith("· iteration 1/12 · running…"), top


async def test_a_wide_browser_fits_its_columns_beside_the_scrollbar() -> None:
    """At 200 columns the columns grew to the table's whole width, under its vertical scrollbar too: the
    last column (cost) was cut and the table scrolled sideways by two cells. They fit left of it now."""
    from beavertui.tui.table import VirtualTable

    run = Path(__file__).resolve().parents[1] / "data" / "h200_batch_run"
    app = BeaverApp(lambda: BrowserScreen(run, watch=False))
    async with app.run_test(size=(200, 16)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
        await pilot.pause()
        table = app.screen.query_one("#sessions", VirtualTable)
        assert table.max_scroll_y > 0  # more rows than lines: the vertical scrollbar shows
        assert table.line_width <= table.scrollable_content_region.width and table.max_scroll_x == 0
        assert screen_text(app).splitlines()[5].rstrip().endswith("—")  # the first row's cost
