"""``replay --follow`` with stdout not a terminal follows headless: one line an event as it is appended.

Before, ``--follow`` was ignored when piped: ``replay --follow SESSION | tee log`` printed the summary of
what was written so far and exited, so a pipe never saw the rest of a session being written. Now it
prints what ``live --headless`` prints, a line an event as each arrives, and ends at the session's end
line (exit 0), or at a bad line or a bound with one line (exit 2).
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sessions" / "demo" / "repair_in_three.jsonl"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def _follow(path: Path) -> tuple[subprocess.Popen[str], queue.Queue[str | None]]:
    """``replay --follow PATH`` with its stdout a pipe, and a queue of its lines (None at its end)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "beavertui", "replay", "--follow", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


def _take(lines: queue.Queue[str | None], n: int) -> list[str | None]:
    return [lines.get(timeout=60) for _ in range(n)]


def test_a_piped_follow_prints_each_event_as_it_is_appended_until_the_end(tmp_path: Path) -> None:
    text = DEMO.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "growing.jsonl"
    path.write_text("".join(text[:5]), encoding="utf-8")  # the header and the first attempt's start
    proc, lines = _follow(path)
    try:
        first = _take(lines, 5)
        assert str(first[0]).startswith("session ") and "task transpose_00" in str(first[0])
        assert [str(x).split()[:2] for x in first[1:]] == [["#1", "request"], ["#1", "reply"], ["#1", "candidate"], ["#1", "build"]]  # fmt: skip
        assert proc.poll() is None  # still following: was the summary of 4 events, and exit
        with path.open("a", encoding="utf-8") as fh:
            fh.write("".join(text[5:]))
        rest = _take(lines, len(text) - 5 + 1)
        assert rest[-1] is None  # the output ended
        assert str(rest[-2]).startswith("end passed after 3 iterations, success")
        assert "#3  verdict   PASS 0.96x" in rest
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_piped_follow_waits_for_a_file_not_written_yet(tmp_path: Path) -> None:
    path = tmp_path / "later.jsonl"
    proc, lines = _follow(path)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == f"beavertui: waiting for {path} to be written (ctrl+c to give up)\n"
        path.write_text(DEMO.read_text(encoding="utf-8"), encoding="utf-8")
        out = _take(lines, len(DEMO.read_text(encoding="utf-8").splitlines()) + 1)
        assert str(out[0]).startswith("session ") and str(out[-2]).startswith("end passed")
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_piped_follow_ends_at_a_bad_line_in_one_line(tmp_path: Path) -> None:
    text = DEMO.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(text[:3]) + "{not json}\n", encoding="utf-8")
    p = subprocess.run(
        [sys.executable, "-m", "beavertui", "replay", "--follow", str(path)],
        capture_output=True, text=True, env=ENV, timeout=60,
    )  # fmt: skip
    assert p.returncode == 2
    assert len(p.stdout.splitlines()) == 3  # the header and the two events before the bad line
    assert p.stderr.startswith(f"beavertui: {path}: ") and "line 4" in p.stderr and p.stderr.count("\n") == 1


def test_a_piped_follow_of_a_fifo_is_refused_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    p = subprocess.run(
        [sys.executable, "-m", "beavertui", "replay", "--follow", str(fifo)],
        capture_output=True, text=True, env=ENV, timeout=60,
    )  # fmt: skip
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(f"beavertui: {fifo}") and p.stderr.count("\n") == 1
