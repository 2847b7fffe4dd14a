"""The paper's numbers on attempts tables shaped like its published rows (docs/metrics.md)."""

from __future__ import annotations

from typing import Any

import pytest

from beavertui.engine.metrics.compute import compute_groups
from beavertui.engine.metrics.table import from_rows
from beavertui.engine.session.protocol import Protocol

PAPER = Protocol().key()  # iterative K5 L3 H4 T0.7, p0.7 after the run


def attempt(task: str, it: int, category: str, speedup: float | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "run_id": "r",
        "model": kw.pop("model", "GPT-5.4"),
        "task_id": task,
        "protocol": kw.pop("protocol", PAPER),
        "sample": kw.pop("sample", 0),
        "iteration": it,
        "category": category,
        "correct": category == "passed",
        "speedup": speedup,
        "stop_reason": None,
        "self_source": False,
        **kw,
    }


def gpt54_rows() -> list[dict[str, Any]]:
    """213 tasks: 62 fast repairs (31 at iteration 1, 31 at 2), 56 correct but slow (0.5x at iteration 2:
    the after-run gate ends them ``passed``), 81 stopped by no_progress after three failures, 14 out of
    budget after five."""
    rows: list[dict[str, Any]] = []
    n = 0
    for i in range(62):
        t = f"t{n}"
        n += 1
        if i < 31:
            rows.append(attempt(t, 1, "passed", 1.2, stop_reason="passed"))
        else:
            rows += [attempt(t, 1, "buildability"), attempt(t, 2, "passed", 1.2, stop_reason="passed")]
    for _ in range(56):
        t = f"t{n}"
        n += 1
        rows += [attempt(t, 1, "functional_correctness"), attempt(t, 2, "passed", 0.5, stop_reason="passed")]
    for _ in range(81):
        t = f"t{n}"
        n += 1
        rows += [attempt(t, i, "illegal_memory_access") for i in (1, 2)]
        rows.append(attempt(t, 3, "illegal_memory_access", stop_reason="no_progress"))
    for _ in range(14):
        t = f"t{n}"
        n += 1
        rows += [attempt(t, i, "buildability") for i in (1, 2, 3, 4)]
        rows.append(attempt(t, 5, "functional_correctness", stop_reason="budget"))
    assert n == 213
    return rows


def test_gpt54_row_gives_the_papers_stagnation_and_pass_at_5() -> None:
    (g,) = compute_groups(from_rows(gpt54_rows()))
    assert g.n_tasks == 213
    assert round(100 * g.pass_at_k, 1) == 29.1  # type: ignore[operator]
    assert g.pass_at_k == pytest.approx(62 / 213)
    assert (g.n_stagnated, g.n_never_succeeded) == (81, 95)
    assert round(100 * g.stagnation_rate, 1) == 85.3  # type: ignore[operator]
    assert g.dominant_stagnation == "no_progress" and g.dominant_stagnation_share == 1.0
    # pass@1 31/213 = 14.6%, debug_rate@5 = (62 - 31) / (213 - 31) = 17.0%
    assert g.pass_at_1 == pytest.approx(31 / 213)
    assert g.debug_rate == pytest.approx(31 / 182)
    # the correct-but-slow trajectories are correct at p = 0
    assert g.p_sweep[0.0] == pytest.approx(118 / 213)


def test_compile_at_1_and_average_iterations() -> None:
    """First attempts: a build error, a wrong result, a build that hit its time limit (category timeout,
    not compiled), a pass: compile@1 = 2/4. First correct at iterations 1, 2 and 4 (task D never):
    avg_iterations = 7/3."""
    rows = [
        attempt("A", 1, "buildability"),
        attempt("A", 2, "passed", 1.0, stop_reason="passed"),
        attempt("B", 1, "functional_correctness"),
        attempt("B", 2, "functional_correctness"),
        attempt("B", 3, "timeout", compiled=False),
        attempt("B", 4, "passed", 0.4, stop_reason="passed"),
        attempt("C", 1, "timeout", compiled=False),
        attempt("C", 2, "timeout", stop_reason="no_progress"),
        attempt("D", 1, "passed", 2.0, stop_reason="passed"),
    ]
    (g,) = compute_groups(from_rows(rows))
    assert g.compile_at_1 == pytest.approx(2 / 4)
    assert g.avg_iterations == pytest.approx((2 + 4 + 1) / 3)
    # without the column, the category decides: timeout counts as compiled (the case the column fixes)
    (old,) = compute_groups(from_rows([{k: v for k, v in r.items() if k != "compiled"} for r in rows]))
    assert old.compile_at_1 == pytest.approx(3 / 4)


def test_an_arm_run_twice_is_scored_once() -> None:
    """Two runs of one protocol in one folder (paper-method used to run the iterative arm again) are not two
    trajectories per task: the first run's are kept, the other's counted."""
    from beavertui.engine.metrics.rescore import drop_repeated_arms

    once = [
        attempt("A", 1, "passed", 1.2, stop_reason="passed"),
        attempt("B", 1, "buildability", stop_reason="budget"),
    ]
    again = [
        {**r, "run_id": "r2", "correct": False, "category": "buildability", "speedup": None} for r in once
    ]
    table, dropped = drop_repeated_arms(from_rows(once + again))
    assert dropped == {"r2": 2} and len(table) == 2
    (g,) = compute_groups(table)
    assert g.pass_at_k == 0.5 and g.n_trajectories == 2
    # another sample index, or another protocol, is another arm
    other = [{**r, "run_id": "r2", "sample": 1} for r in once]
    assert drop_repeated_arms(from_rows(once + other))[1] == {}


def test_gate_rescoring_keeps_an_in_loop_gate() -> None:
    from beavertui.engine.metrics.rescore import with_gate

    in_loop = Protocol(gate_mode="in_loop").key()
    rows = [
        attempt("A", 1, "passed", 0.8, stop_reason="passed"),
        attempt("B", 1, "passed", 0.8, protocol=in_loop),
    ]
    table, kept = with_gate(from_rows(rows), 1.0)
    assert [p.gate for p in table.protocols] == [1.0, 0.7] and [p.gate_mode for p in kept] == ["in_loop"]
    by = {g.protocol.gate_mode: g for g in compute_groups(table)}
    assert by["after_run"].pass_at_k == 0.0 and by["in_loop"].pass_at_k == 1.0
