"""A flagged success (a verdict that passed the gate but carries an anti-cheat flag) is counted apart in the
metrics and never as a success: from the session to the attempts table, through its files, into the groups
and the reports."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.metrics.attempts import rows_of_session
from beavertui.engine.metrics.compute import compute_groups
from beavertui.engine.metrics.table import from_rows
from beavertui.engine.metrics.table_io import read_table, write_csv, write_jsonl
from beavertui.engine.session.events import Flag, Verdict
from beavertui.engine.session.state import fold
from beavertui.reports.tables import main_tables
from tests.tui.sessions_data import quick_session

PROTO = {"method": "iterative", "feedback": "L3", "history": 2, "temperature": 0.0, "gate": 0.7, "budget": 3}


def row(task: str, it: int, correct: bool, speedup: float | None, flagged: bool = False) -> dict[str, Any]:
    return {
        "run_id": "r",
        "model": "m",
        "task_id": task,
        "protocol": PROTO,
        "sample": 0,
        "iteration": it,
        "category": "passed" if correct else "functional_correctness",
        "correct": correct,
        "speedup": speedup,
        "stop_reason": None,
        "self_source": False,
        "flagged": flagged,
    }


ROWS = [
    row("A", 1, True, 1.2),  # a plain success
    row("B", 1, True, 40.0, flagged=True),  # a flagged success: not a success
    row("C", 1, True, 0.9, flagged=True),  # flagged, later a plain success
    row("C", 2, True, 0.8),
    row("D", 1, True, 0.3, flagged=True),  # flagged but below the gate: not counted as a flagged success
]


def test_flagged_success_is_counted_apart_not_as_success() -> None:
    (g,) = compute_groups(from_rows(ROWS))
    assert g.n_flagged_successes == 2  # B and C's first attempt
    assert g.pass_at_1 == pytest.approx(1 / 4)  # only A at iteration 1
    assert g.pass_at_k == pytest.approx(2 / 4)  # A and C (its second attempt)
    assert g.as_json()["flagged_successes"] == 2
    (plain,) = compute_groups(from_rows([{**r, "flagged": False} for r in ROWS]))
    assert plain.n_flagged_successes == 0 and plain.pass_at_k == pytest.approx(3 / 4)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_flagged_column_survives_the_table_files(tmp_path: Path, fmt: str) -> None:
    buf = io.StringIO()
    (write_jsonl if fmt == "jsonl" else write_csv)(ROWS * 50, buf)
    path = tmp_path / f"attempts.{fmt}"
    path.write_text(buf.getvalue())
    table = read_table(path)
    assert table.flagged.tolist() == [r["flagged"] for r in ROWS] * 50
    assert compute_groups(table)[0].n_flagged_successes == 2 * 50


def test_table_without_the_column_reads_as_unflagged(tmp_path: Path) -> None:
    buf = io.StringIO()
    write_jsonl([{k: v for k, v in r.items() if k != "flagged"} for r in ROWS * 50], buf)
    path = tmp_path / "attempts.jsonl"
    path.write_text(buf.getvalue())
    table = read_table(path)
    assert len(table) == 250 and not table.flagged.any()
    assert compute_groups(table)[0].pass_at_k == pytest.approx(3 / 4)


def test_session_rows_mark_anti_cheat_flags_only() -> None:
    hdr, events = quick_session("t1", "m", "s1", speed=20.0, seed=1)

    def with_flags(flags: list[Flag]) -> list[dict[str, Any]]:
        evs = [e.model_copy(update={"flags": flags}) if isinstance(e, Verdict) else e for e in events]
        return list(rows_of_session(fold(hdr, evs)))

    assert [
        r["flagged"] for r in with_flags([Flag(name="side_stream", detail="host 2 ms vs event 0.01 ms")])
    ] == [True]
    assert [
        r["flagged"]
        for r in with_flags([Flag(name="unstable_timing", detail="CV 4.0% candidate, 1.0% reference")])
    ] == [False]
    assert [r["flagged"] for r in with_flags([])] == [False]


def test_report_table_shows_the_count() -> None:
    main, _ = main_tables(compute_groups(from_rows(ROWS)), resamples=50)
    i = main.columns.index("flagged")
    assert main.rows[0][i] == "2"


def test_a_success_timed_above_the_cv_rule_counts_and_is_counted(tmp_path: Path) -> None:
    """unstable_timing is not an anti-cheat flag: the success stands (the paper scores recorded speedups),
    and the group says how many of its successes at the gate were so timed, through the table files too."""
    rows = [
        {**row("A", 1, True, 1.2), "unstable_timing": True},  # a success at the gate, noisy
        {**row("B", 1, True, 0.3), "unstable_timing": True},  # below the gate: not a success
        {**row("C", 1, True, 40.0, flagged=True), "unstable_timing": True},  # flagged: counted there
        row("D", 1, True, 0.9),
    ]
    (g,) = compute_groups(from_rows(rows))
    assert g.n_unstable_successes == 1 and g.as_json()["unstable_timing_successes"] == 1
    assert g.pass_at_k == pytest.approx(2 / 4) and g.n_flagged_successes == 1
    for fmt, writer in (("jsonl", write_jsonl), ("csv", write_csv)):
        buf = io.StringIO()
        writer(rows, buf)
        path = tmp_path / f"attempts.{fmt}"
        path.write_text(buf.getvalue())
        assert read_table(path).unstable().tolist() == [True, True, True, False]
    main, _ = main_tables([g], resamples=50)
    assert "unstable timing: 1" in str(main.rows[0][main.columns.index("note")])
    (old,) = compute_groups(from_rows([{k: v for k, v in r.items() if k != "unstable_timing"} for r in rows]))
    assert old.n_unstable_successes == 0


def test_session_rows_mark_a_timing_above_the_cv_rule() -> None:
    hdr, events = quick_session("t1", "m", "s1", speed=20.0, seed=1)

    def with_flags(flags: list[Flag]) -> list[dict[str, Any]]:
        evs = [e.model_copy(update={"flags": flags}) if isinstance(e, Verdict) else e for e in events]
        return list(rows_of_session(fold(hdr, evs)))

    assert [
        r["unstable_timing"]
        for r in with_flags([Flag(name="unstable_timing", detail="CV 4.0% candidate, 1.0% reference")])
    ] == [True]
    assert [
        r["unstable_timing"]
        for r in with_flags([Flag(name="side_stream", detail="host 2 ms vs event 0.01 ms")])
    ] == [False]
