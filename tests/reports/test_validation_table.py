"""The table ``corpus validate`` prints, built in reports/ from the tasks' validations on this machine."""

from __future__ import annotations

from beavertui.engine.validation.validate import TaskValidation
from beavertui.reports.validation import COLUMNS, validation_table


def test_each_task_is_a_row_with_its_verdict_reference_and_throughput() -> None:
    timed = TaskValidation(
        task_id="a", label="runtime_error", runnable=True, reference_category="passed",
        broken_category="runtime_error", method="cupti", reference_ms=0.12345, reference_cv=0.031, unstable=True,
        reference_measured_for="b", tflops=12.34, tflops_fraction=0.456, gbps=812.6, gbps_fraction=0.0,
    )  # fmt: skip
    relabelled = TaskValidation(
        task_id="b", label="wrong_output", runnable=True, reference_kind="in_binary",
        broken_category="runtime_error", broken_signature="illegal address",
    )  # fmt: skip
    slow = TaskValidation(
        task_id="c", label="perf_broken", runnable=True, reference_category="passed", broken_category="passed",
        broken_speedup=0.42,
    )  # fmt: skip
    absent = TaskValidation(task_id="d", label="compile_error", runnable=False, reason="needs cutlass")
    table = validation_table([timed, relabelled, slow, absent], "h100-sxm")
    assert table.title == "2 usable, 1 usable with a corrected label, 1 unusable, of 4 tasks on h100-sxm"
    assert table.columns == COLUMNS and table.keys == 1
    assert table.rows == (
        ("a", "runtime_error", "usable", "passed", "runtime_error",
         "0.1235 ms cupti CV 3.1% unstable (measured for b)", "12.3 TFLOP/s (46% bf16), 813 GB/s"),
        ("b", "wrong_output", "usable relabelled: observed runtime_error: illegal address", "in testbench",
         "runtime_error", "", ""),
        ("c", "perf_broken", "usable", "passed", "passed at 0.42x", "", ""),
        ("d", "compile_error", "unusable: needs cutlass", "", "", "", ""),
    )  # fmt: skip
