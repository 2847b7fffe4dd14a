"""Per-attempt analysis columns, the per-group summary next to pass@k, and the TUI's plain lines."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from beavertui.engine.analysis.attribution import attribute, subsets
from beavertui.engine.analysis.report import (
    COLUMNS,
    analyse,
    attempt_columns,
    attempt_lines,
    attribution_rows,
    summarize,
)
from beavertui.engine.corpus.fixes import FixTarget
from beavertui.engine.session.events import Candidate, TaskRef, Verdict
from beavertui.engine.session.state import AttemptState
from tests.engine.code.test_code_features import NAIVE, TILED

BROKEN = TILED.replace("t < n / TILE", "t <= n / TILE")
TASK = TaskRef(
    id="sgemm_tiled_00",
    family="gemm",
    label="illegal_memory_access",
    corpus="corpus",
    layout="native",
    solution_file="solution.cu",
    broken_start=BROKEN,
    reference=TILED,
)
FIX = FixTarget(TILED)
"""The task's minimal fix (the one-line loop bound), given explicitly: the task is in no corpus."""


def attempt(code: str | None, correct: bool, iteration: int = 2) -> AttemptState:
    return AttemptState(
        iteration=iteration,
        candidate=Candidate(iteration=iteration, code=code),
        verdict=Verdict(
            iteration=iteration,
            category="passed" if correct else "functional_correctness",
            signature="",
            correct=correct,
            speedup=0.3 if correct else None,
        ),
    )


def test_faithful_repair_columns() -> None:
    cols = attempt_columns(TASK, attempt(TILED, True), FIX)
    assert cols == {"edit_precision": 1.0, "bug_recall": 1.0, "code_degenerate": False, "lost_features": ""}


def test_naive_rewrite_columns() -> None:
    cols = attempt_columns(TASK, attempt(NAIVE, True), FIX)
    assert cols["code_degenerate"] is True
    assert cols["lost_features"] == "shared_memory+barriers"
    assert cols["bug_recall"] == 1.0  # the rewrite touches the broken loop bound
    assert isinstance(cols["edit_precision"], float) and cols["edit_precision"] < 0.3


def test_incorrect_or_codeless_attempts_are_not_analysed() -> None:
    assert attempt_columns(TASK, attempt(NAIVE, False), FIX) == dict.fromkeys(COLUMNS)
    assert attempt_columns(TASK, attempt(None, True), FIX) == dict.fromkeys(COLUMNS)
    assert attempt_lines(analyse(TASK, attempt(NAIVE, False)))[0].startswith("Not analysed")


def test_no_reference_still_reports_degeneration_against_the_broken_start() -> None:
    task = TASK.model_copy(update={"reference": None})
    cols = attempt_columns(task, attempt(NAIVE, True), FIX)
    assert cols["code_degenerate"] is True and cols["bug_recall"] == 1.0


def test_task_without_verified_fix_is_unscored_not_scored_against_the_reference() -> None:
    # TASK is in no corpus, so it has no verified minimal fix: a perfect copy of the reference is unscored.
    a = analyse(TASK, attempt(TILED, True))
    assert a is not None and a.edit is None and a.unscored == "task not found in its corpus"
    cols = attempt_columns(TASK, attempt(TILED, True))
    assert (cols["edit_precision"], cols["bug_recall"], cols["code_degenerate"]) == (None, None, False)
    assert attempt_lines(a)[0] == "Edit: unscored, no verified minimal fix (task not found in its corpus)."


def test_lines_name_the_lost_features() -> None:
    lines = attempt_lines(analyse(TASK, attempt(NAIVE, True), FIX))
    assert lines[1] == "Degenerate: lost shared_memory, barriers"
    assert lines[0].startswith("Edit precision ")


def test_summary_uses_each_trajectory_first_success() -> None:
    nan = math.nan
    # trajectory 0: fails, then succeeds at 2 (precision .5, degenerate), then again at 3 (ignored);
    # trajectory 1: succeeds at 1 (precision 1, not degenerate); trajectory 2: never succeeds.
    s = summarize(
        trajectory=[0, 0, 0, 1, 2, 2],
        iteration=[1, 2, 3, 1, 1, 2],
        correct=[False, True, True, True, False, False],
        edit_precision=[nan, 0.5, 0.9, 1.0, nan, nan],
        bug_recall=[nan, 1.0, 1.0, 0.5, nan, nan],
        code_degenerate=[nan, 1.0, 0.0, 0.0, nan, nan],
    )
    assert s == {
        "edit_precision": pytest.approx(0.75),
        "bug_recall": pytest.approx(0.75),
        "code_degenerate_rate": 1.0,  # only trajectory 0 first succeeds at iteration >= 2
        "analysed_repairs": 2,
    }


def test_summary_of_no_success_is_null() -> None:
    s = summarize([0], [1], [False], [math.nan], [math.nan], [math.nan])
    assert s == {
        "edit_precision": None,
        "bug_recall": None,
        "code_degenerate_rate": None,
        "analysed_repairs": 0,
    }


def test_attribution_rows() -> None:
    comps = ("compiler", "timing")
    a = attribute(comps, [{s: [float("compiler" in s)] for s in subsets(comps)}], resamples=20)
    rows = attribution_rows(a)
    assert rows[0] == ("compiler", "+1.00 [+1.00, +1.00]", "+1.00 [+1.00, +1.00]")
    assert attribution_rows(a, "pair") == [
        ("compiler×timing", "+0.00 [+0.00, +0.00]", "+0.00 [+0.00, +0.00]")
    ]


def test_run_summary_over_session_files(tmp_path: Path) -> None:
    from beavertui.engine.analysis.branch import branch_session
    from beavertui.engine.analysis.edits import edit_score
    from beavertui.engine.analysis.report import run_summary
    from beavertui.engine.loop.run import run_session
    from beavertui.engine.metrics.groups import group_key
    from beavertui.engine.models.scripted import ScriptedModel
    from beavertui.engine.session.protocol import Protocol
    from beavertui.engine.toolchain.recorded import RecordedToolchain
    from tests.engine.analysis import test_analysis_branch as tb

    protocol = Protocol(budget=3, gate=0.0)
    tc = RecordedToolchain(tb.recordings())
    task = tb.load_task()
    # Trajectory 1: fails, then repairs by a naive rewrite at iteration 2 (degenerate in the code).
    tb.write(
        tmp_path / "a.jsonl",
        run_session(task, ScriptedModel([tb.reply(tb.WRONG_A), tb.reply(tb.NAIVE)]), tc, protocol),
    )
    # Trajectory 2: the reference's own fix at iteration 1.
    tb.write(
        tmp_path / "b.jsonl",
        run_session(task, ScriptedModel([tb.reply(tb.REFERENCE)]), tc, protocol, sample=1),
    )
    # Another group (budget 2, gate 0.7) that never succeeds, and a branch of it, which is skipped.
    (tmp_path / "other").mkdir()
    parent = tb.parent_session(tmp_path / "other")
    branch = branch_session(parent, 1, task, ScriptedModel([tb.reply(tb.REFERENCE)]), tc, Protocol(budget=2))
    tb.write(tmp_path / "other" / "branch.jsonl", branch)
    summary = run_summary(tmp_path)
    corpus = Path(task.ref().corpus).name
    naive = edit_score(tb.BROKEN, tb.NAIVE, tb.REFERENCE)
    assert naive.precision is not None and naive.recall is not None and naive.precision < 0.5
    assert summary[group_key("scripted", protocol.key(), corpus)] == {
        "edit_precision": pytest.approx((naive.precision + 1.0) / 2),
        "bug_recall": pytest.approx((naive.recall + 1.0) / 2),
        "code_degenerate_rate": 1.0,
        "analysed_repairs": 2,
        "unscored_repairs": 0,
    }
    other = summary[group_key("scripted", Protocol(budget=2, history=2).key(), corpus)]
    assert other == {
        "edit_precision": None,
        "bug_recall": None,
        "code_degenerate_rate": None,
        "analysed_repairs": 0,
        "unscored_repairs": 0,
    }
    assert len(summary) == 2  # the branch (a success) formed no group and changed none


def test_run_summary_keys_match_the_metrics_groups(tmp_path: Path) -> None:
    from beavertui.engine.analysis.report import run_summary
    from beavertui.engine.metrics.attempts import table_from_run
    from beavertui.engine.metrics.compute import compute_groups
    from beavertui.engine.metrics.groups import group_key
    from tests.engine.analysis import test_analysis_branch as tb

    (tmp_path / "run").mkdir()
    tb.parent_session(tmp_path / "run")
    groups = [g.as_json() for g in compute_groups(table_from_run(tmp_path / "run"))]
    summary = run_summary(tmp_path / "run")
    assert [group_key(g["model"], g["protocol"], g["corpus"]) for g in groups] == list(summary)


def test_printed_serial_geometry_marks_a_repair_degenerate() -> None:
    from dataclasses import replace

    from beavertui.engine.session.events import Ran, StageResult

    log = "launch grid=(1,1,1) block=(1,1,1)\nOK C: 1048576 elements\n"
    ran = Ran(iteration=2, result=StageResult(stage="run", command="./test.out", rc=0, log=log))
    cols = attempt_columns(TASK, replace(attempt(TILED, True), run=ran))
    assert (cols["lost_features"], cols["code_degenerate"]) == ("parallel_launch", True)


def test_attribution_rows_print_no_negative_zero() -> None:
    from beavertui.engine.analysis.attribution import Attribution, Estimate

    e = Estimate(-1e-17, -2e-17, 0.0)
    a = Attribution(("timing",), {"timing": e}, {"timing": e}, {}, {}, {}, 1, 1, 0.95)
    assert attribution_rows(a) == [("timing", "+0.00 [+0.00, +0.00]", "+0.00 [+0.00, +0.00]")]
