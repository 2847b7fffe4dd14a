"""The browser: rows read lazily from header and tail, sorting, filtering, live updates, opening a session."""

from __future__ import annotations

import os
from pathlib import Path

from beavertui.service.catalog import parse_filter, read_row
from beavertui.tui.app import BeaverApp
from beavertui.tui.browser import COLUMNS, BrowserScreen
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import DATA, OLD, SIZE, wait_for


def test_rows_from_header_and_tail(run_dir: Path) -> None:
    deg = read_row(run_dir / "degenerate.jsonl")
    assert (deg.task, deg.model, deg.outcome, deg.iterations, deg.best, deg.stop, deg.category) == (
        "gemm_tiled_bounds",
        "gpt-4.1",
        "success",
        4,
        0.9419,
        "passed",
        "passed",
    )
    assert deg.protocol == "iterative K5 L3 H2 T0 p0.7 in-loop"
    stuck = read_row(run_dir / "stuck.jsonl")
    assert (stuck.outcome, stuck.stop, stuck.best, stuck.category) == (
        "failed",
        "duplicate_code",
        None,
        "functional_correctness",
    )
    cut = read_row(run_dir / "damaged.jsonl")  # old and without an end line: its writer died mid-line
    assert (cut.outcome, cut.stop, cut.iterations) == ("incomplete", "cut mid-line", 2)


def test_running_and_damaged_rows(tmp_path: Path) -> None:
    text = (DATA / "degenerate.jsonl").read_text().splitlines(True)
    growing = tmp_path / "growing.jsonl"
    growing.write_text("".join(text[:10]))
    assert read_row(growing).outcome == "running"  # just written, no end line yet
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(text[:5]) + "{not json}\n")
    assert (read_row(bad).outcome, read_row(bad).stop) == ("damaged", "bad line 6")
    assert read_row(bad).problem is not None and "line 6" in read_row(bad).problem
    nohead = tmp_path / "nohead.jsonl"
    nohead.write_text("hello\n")
    assert read_row(nohead).outcome == "damaged"


def test_filter_tokens() -> None:
    assert parse_filter("outcome:failed Model:QWEN gemm") == [
        ("outcome", "failed"),
        ("model", "qwen"),
        ("", "gemm"),
    ]


async def loaded(pilot, app) -> BrowserScreen:  # type: ignore[no-untyped-def]
    await wait_for(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.loaded)
    return app.screen


async def test_sort_filter_open(run_dir: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot, app)
        table = screen.query_one("#sessions")
        assert table.row_count == 4
        await pilot.press("6")  # best speedup, highest first
        assert [Path(k).stem for k in table.keys][:2] == ["quick", "degenerate"]
        await pilot.press("6")
        assert Path(table.keys[-1]).stem == "quick"
        await pilot.press("slash", *"outcome:failed", "enter")
        await pilot.pause()
        assert [Path(k).stem for k in table.keys] == ["stuck"]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SessionScreen)
        assert app.screen.view.state.header.model.name == "qwen2.5-coder-32b"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("escape")  # clears the filter
        await pilot.pause()
        assert table.row_count == 4


async def test_updates_while_a_batch_writes(run_dir: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(run_dir))
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot, app)
        table = screen.query_one("#sessions")
        await pilot.pause(1.0)  # let the watcher start
        lines = (DATA / "degenerate.jsonl").read_text().splitlines(True)
        new = run_dir / "new.jsonl"
        new.write_text("".join(lines[:9]))
        await wait_for(pilot, lambda: table.row_count == 5)
        assert screen.rows[str(new)].outcome == "running"
        with new.open("a") as fh:
            fh.write("".join(lines[9:]))
        await wait_for(pilot, lambda: screen.rows[str(new)].outcome == "success")
        assert screen.rows[str(new)].best == 0.9419
        assert table.row_count == 5


async def test_empty_folder_says_so(tmp_path: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(tmp_path, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot, app)
        assert "no session files" in str(screen.query_one("#browser-status").render())


async def test_click_on_a_column_title_sorts(run_dir: Path) -> None:
    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot, app)
        title = screen.query_one("#browser-columns").render().plain  # type: ignore[attr-defined]
        await pilot.click("#browser-columns", offset=(title.index("Best") + 1, 0))
        await pilot.pause()
        assert screen.sort_column == "best" and screen.reverse
        assert Path(screen.query_one("#sessions").keys[0]).stem == "quick"


async def test_unknown_filter_key_is_said(run_dir: Path) -> None:
    """A misspelt key (``modle:``) is named in the status line and a notice, with the keys that exist;
    a known key filters as before."""
    app = BeaverApp(lambda: BrowserScreen(run_dir, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot, app)
        await pilot.press("slash", *"modle:qwen", "enter")
        await pilot.pause()
        status = str(screen.query_one("#browser-status").render())
        assert "unknown filter key modle:" in status and "model:" in status
        assert any("unknown filter key modle:" in str(n.message) for n in app._notifications)
        await pilot.press("escape", "slash", *"model:qwen", "enter")
        await pilot.pause()
        assert "unknown filter key" not in str(screen.query_one("#browser-status").render())
        assert [Path(k).stem for k in screen.query_one("#sessions").keys] == ["stuck"]


def _odd_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A run folder with a file of an unknown format version and a session in a subfolder."""
    root = tmp_path / "run"
    (root / "batch-7").mkdir(parents=True)
    head = (DATA / "degenerate.jsonl").read_text().splitlines(True)
    bad = root / "zz-unknown-format.jsonl"
    bad.write_text(head[0].replace('"format_version":1', '"format_version":99') + "".join(head[1:]))
    nested = root / "batch-7" / "gemm_tiled_bounds-s3-0123456789ab.jsonl"
    nested.write_text("".join(head))
    for p in (bad, nested):
        os.utime(p, (OLD, OLD))
    return root, bad, nested


async def test_rows_name_their_file_and_the_detail_line_gives_the_whole_reason(tmp_path: Path) -> None:
    """Each row shows its session file (its path under the folder, cut from the left when long); the
    stop column gives a damaged file's reason in a few words, and the line under the table the reader's
    whole reason for the row at the cursor (it was cut to "bad header (Un" before)."""
    root, bad, nested = _odd_run(tmp_path)
    problem = read_row(bad).problem
    assert problem == "unknown format version 99 (this beavertui reads 1 and 2)"
    app = BeaverApp(lambda: BrowserScreen(root, watch=False))
    async with app.run_test(size=SIZE) as pilot:
        screen = await loaded(pilot, app)
        table = screen.query_one("#sessions")
        assert COLUMNS[0].label == "File" and "File" in str(screen.query_one("#browser-columns").render())
        texts = {Path(k).name: table.row_text(i) for i, k in enumerate(table.keys)}
        assert texts[bad.name].startswith(COLUMNS[0].show(bad.name).rstrip())
        assert texts[nested.name].startswith("…") and texts[nested.name].split()[0].endswith(
            "0123456789ab.jsonl"
        )
        assert "unknown format" in texts[bad.name] and problem not in texts[bad.name]
        detail = screen.query_one("#browser-detail")
        for path, whole in ((bad, problem), (nested, str(Path("batch-7") / nested.name))):
            await pilot.press("home", *["down"] * [Path(k) for k in table.keys].index(path))
            await pilot.pause()
            assert Path(table.current_key) == path
            shown = str(detail.render())
            assert path.name in shown and whole in shown
        await pilot.press("slash", *"file:s3-0123", "enter")
        await pilot.pause()
        assert [Path(k).name for k in table.keys] == [nested.name]


def test_browse_tables_name_the_file_and_give_the_whole_reason(tmp_path: Path) -> None:
    """`browse --format csv|table` and the piped listing: the file, and a damaged file's whole reason.
    The command runs in this process (tests/cli_in_process.py: output to a pipe, empty stdin)."""
    import csv
    import io

    from tests.cli_in_process import run_cli

    root, bad, nested = _odd_run(tmp_path)
    env = {**os.environ, "COLUMNS": "200"}

    def browse(*args: str) -> str:
        p = run_cli("browse", root, *args, env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout

    rows = list(csv.reader(io.StringIO(browse("--format", "csv"))))
    by_file = {r[-1]: r for r in rows[1:]}
    assert by_file[bad.name][-2] == "unknown format version 99 (this beavertui reads 1 and 2)"
    assert str(Path("batch-7") / nested.name) in by_file
    table = browse("--format", "table")
    assert "unknown format version 99 (this beavertui reads 1 and 2)" in " ".join(table.split())
    piped = browse()
    assert any(bad.name in line and "unknown format version 99" in line for line in piped.splitlines())


async def test_columns_use_the_width_of_the_screen(tmp_path: Path) -> None:
    """At 120 columns the columns keep their least widths (a long model name is cut to 13 characters);
    at 200 the Model column grows (it was 13 at any width), at 250 it shows the name whole, and so does
    the file column; at 80 nothing shrinks below its least width (the table scrolls sideways)."""
    import json

    root = tmp_path / "run"
    root.mkdir()
    lines = (DATA / "degenerate.jsonl").read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    long_model = "openrouter/qwen/qwen3-coder-480b-a35b-instruct"
    header["model"]["name"] = long_model
    path = root / "a-session-file-with-a-long-name.jsonl"
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    os.utime(path, (OLD, OLD))
    widths = {}
    for columns in (80, 120, 200, 250):
        app = BeaverApp(lambda: BrowserScreen(root, watch=False))
        async with app.run_test(size=(columns, 30)) as pilot:
            screen = await loaded(pilot, app)
            table = screen.query_one("#sessions")
            await wait_for(pilot, lambda t=table: t.row_count == 1)
            await pilot.pause()
            cols = {c.key: c.width for c in table.columns}
            widths[columns] = cols
            row = table.row_text(0)
            title = str(screen.query_one("#browser-columns").render())
            assert sum(cols.values()) + len(cols) + 1 <= max(columns, sum(c.width + 1 for c in COLUMNS) + 1)
            if columns >= 200:
                assert title.index("Protocol") - title.index("Model") == cols["model"] + 1
            if columns == 200:  # the cells want more than there is: the width is used
                assert sum(cols.values()) + len(cols) + 1 >= columns - 2
            if columns == 250:
                assert long_model in row and path.name in row
            if columns <= 120:
                assert cols == {c.key: c.width for c in COLUMNS} and long_model[:13] in row
                assert long_model not in row
    assert widths[250]["model"] >= len(long_model) > widths[200]["model"] > widths[120]["model"] == 13
