"""`replay` to a pipe: one line per iteration, the reason shown only where it says more than the category and
the signature beside it (a real H200 session of tests/data/planning/gpu)."""

from __future__ import annotations

from pathlib import Path

from beavertui.engine.session.store import read_session
from beavertui.tui.summary import summary_lines

SESSION = Path(__file__).resolve().parents[1] / "data" / "planning" / "gpu" / "implicit.jsonl"


def test_each_iteration_says_its_category_once() -> None:
    header, events, problem = read_session(SESSION)
    assert header is not None
    lines = summary_lines(header, events, problem)
    first = next(ln for ln in lines if ln.startswith("  it1 "))
    assert first.split()[1:3] == ["functional_correctness", "MISMATCH"], first
    assert first.count("functional_correctness") == 1
    assert next(ln for ln in lines if ln.startswith("  it2 ")).split()[1:4] == ["passed", "1.00x", "success"]
    assert lines[-1] == "  ended: passed after 2, best 1.00x"
