"""Compare screen, and the replay/browse/compare commands' plain output and one-line errors."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from beavertui.cli import main
from beavertui.commands.compare import load
from beavertui.tui.app import BeaverApp
from beavertui.tui.compare import CompareScreen, aligned_table
from tests.tui.conftest import DATA, SIZE
from tests.tui.sessions_data import quick_session, write


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str) -> Result:
    """The CLI in this process, with stdout and stderr captured (so stdout is not a terminal)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return Result(rc, out.getvalue(), err.getvalue())


async def test_compare_aligns_iterations() -> None:
    a, b = load(DATA / "degenerate.jsonl"), load(DATA / "stuck.jsonl")
    app = BeaverApp(lambda: CompareScreen(a, b))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.cursor == 1
        console = Console(width=120, file=io.StringIO(), record=True)
        console.print(aligned_table(screen.a, screen.b, screen.cursor))
        row1 = console.export_text().splitlines()[1]
        assert row1.split()[0] == "1" and row1.rstrip().endswith("identical")  # both began with the same fix
        await pilot.press("right")
        await pilot.pause()
        left, right = screen.query_one("#diff-a").text, screen.query_one("#diff-b").text
        assert "sgemm_naive" in left
        assert "sgemm_naive" not in right and "iteration 2 against iteration 1" in right
        assert screen.query_one("#diff-a").border_title.startswith("A · gpt-4.1 · Diff")
        await pilot.press("end")
        assert screen.cursor == 4
        await pilot.press("d")
        await pilot.pause()
        assert "No attempt yet." in screen.query_one("#diff-b").text  # B stopped after 3
        assert "against broken start" in screen.query_one("#diff-a").text


def test_replay_prints_a_summary_when_not_a_terminal() -> None:
    out = cli("replay", str(DATA / "degenerate.jsonl"))
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert lines[1].split()[:2] == ["it1", "illegal_memory_access"]
    assert "0.08x  below gate" in lines[2]
    assert lines[-1] == "  ended: passed after 4, best 0.94x"


def test_replay_of_damaged_file_says_what_is_wrong() -> None:
    out = cli("replay", str(DATA / "damaged.jsonl"))
    assert out.returncode == 0
    assert out.stdout.splitlines()[-1] == "  damaged: truncated last line (line 13) (valid prefix shown)"


def test_one_line_errors(tmp_path: Path) -> None:
    missing = cli("replay", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"beavertui: {tmp_path / 'nope.jsonl'}: no such session file"
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not a session\n")
    bad = cli("replay", str(junk))
    assert bad.returncode == 2 and bad.stderr.startswith("beavertui: ") and "Traceback" not in bad.stderr
    nodir = cli("browse", str(tmp_path / "none"))
    assert nodir.returncode == 2 and "no such folder" in nodir.stderr
    other = write(tmp_path / "other.jsonl", *quick_session("softmax_rows", "gpt-4.1", "x1", 1.0, 3))
    diff_task = cli("compare", str(DATA / "degenerate.jsonl"), str(other))
    assert diff_task.returncode == 2
    assert "different tasks (gemm_tiled_bounds vs softmax_rows)" in diff_task.stderr


def test_compare_and_browse_plain_output(run_dir: Path) -> None:
    out = cli("compare", str(DATA / "degenerate.jsonl"), str(DATA / "stuck.jsonl"))
    assert out.returncode == 0
    row2 = next(line for line in out.stdout.splitlines() if line.strip().startswith("2 "))
    assert "FAILED: BELOW GATE" in row2 and "0.08x" in row2 and "FUNCTIONAL CORRECTNESS" in row2
    listing = cli("browse", str(run_dir))
    assert listing.returncode == 0
    rows = sorted(line.split("\t")[3] for line in listing.stdout.splitlines())
    assert rows == ["failed", "incomplete", "success", "success"]
