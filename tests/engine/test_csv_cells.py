"""The guard of CSV text cells against spreadsheet formulas (engine/csv_cells.py): reversible for every
text, never applied to a number, and undone by both readers of the attempts table (the vectorised one and
the standard parser)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beavertui.engine.csv_cells import TRIGGERS, guard, unguard
from beavertui.engine.metrics import table_fast, table_io

#: Any text a cell can hold in a UTF-8 file (a lone surrogate cannot be written as UTF-8).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)))
#: Texts that begin the way a spreadsheet formula (or the guard's quote) does.
RISKY = st.builds(lambda head, tail: head + tail, st.sampled_from(TRIGGERS), TEXT)


def is_number(cell: str) -> bool:
    try:
        return float(cell) == float(cell) and abs(float(cell)) != float("inf")
    except ValueError:
        return False


@settings(max_examples=400, deadline=None)
@given(TEXT | RISKY)
def test_every_text_comes_back_and_no_written_text_starts_a_formula(text: str) -> None:
    cell = guard(text)
    assert unguard(cell) == text
    if cell.startswith(("=", "+", "-", "@", "\t", "\r")):
        assert (is_number(cell) or cell == "-") and cell == text  # a plain number or the mark "-" stays


@pytest.mark.parametrize("number", [-3, 0, 2.5, -0.125, 1e-5, -1e300, float("-inf")])
def test_numbers_are_never_guarded(number: float) -> None:
    assert guard(number) is number


@pytest.mark.parametrize("text", ["-3", "+4", "-0.125", "1e-05", "-1e+300", ".5", "-7.", "-"])
def test_number_texts_and_the_none_mark_are_never_guarded(text: str) -> None:
    assert guard(text) == text


def test_the_usual_payloads_are_guarded() -> None:
    assert (
        guard('=HYPERLINK("http://example.invalid","open")')
        == '\'=HYPERLINK("http://example.invalid","open")'
    )
    assert guard("-2+3+cmd|' /C calc'!A0") == "'-2+3+cmd|' /C calc'!A0"
    assert guard("@SUM(A1)") == "'@SUM(A1)"
    assert guard("\t=1") == "'\t=1"
    assert guard("'quoted") == "''quoted"
    assert guard("-inf") == "'-inf"  # a spreadsheet reads it as a formula, not a number
    assert guard("plain model") == "plain model"


def _row(text: str, planner: str = "self") -> dict[str, Any]:
    return {
        "run_id": text,
        "model": text,
        "task_id": text,
        "protocol": {
            "method": "iterative",
            "feedback": "L3",
            "history": 2,
            "temperature": 0.0,
            "gate": 0.7,
            "budget": 5,
            "planner": planner,  # a protocol value ("null" there means the default, as in JSON)
        },
        "sample": 0,
        "iteration": 1,
        "category": "passed",
        "correct": True,
        "speedup": 1.5,
        "stop_reason": text,
        "self_source": False,
        "family": text,
    }


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT.filter(bool) | RISKY, min_size=1, max_size=5))
def test_attempts_csv_round_trips_any_text(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str]
) -> None:
    """Any text in the string columns -> write_csv -> read_table is the same text, through whichever parser
    the file takes (a text with a comma, quote or line break is CSV-quoted and read by the standard parser;
    a plain one by the vectorised reader)."""
    path = tmp_path_factory.mktemp("rt") / "a.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        table_io.write_csv([_row(t) for t in texts], f)
    rows = list(table_io.read_table(path).rows())
    for text, row in zip(texts, rows, strict=True):
        assert [row[c] for c in ("run_id", "model", "task_id", "stop_reason", "family")] == [text] * 5
        assert row["speedup"] == 1.5


def test_the_vectorised_reader_takes_the_guard_off() -> None:
    """A file with guarded cells and no CSV quoting stays on the vectorised path and reads as the
    standard parser does."""
    buf = io.StringIO()
    table_io.write_csv([_row("=1+2"), _row("'x", "@planner"), _row("-plain")], buf)
    data = buf.getvalue()
    assert "'=1+2," in data and "''x," in data and '"' not in data
    header, body = data.split("\n", 1)
    fast = table_fast.fast_csv_chunk(body.encode(), header.split(","))
    assert fast is not None
    assert fast.col("model").values() == ["=1+2", "'x", "-plain"]
    assert [r["protocol"]["planner"] for r in fast.rows()] == ["self", "@planner", "self"]
    slow = table_io._slow_csv(body.encode(), header.split(","))
    assert list(slow.rows()) == list(fast.rows())
