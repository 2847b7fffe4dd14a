"""The table ``corpus validate`` prints: one row per task, its verdict on this machine and what it was seen
to do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from beavertui.reports.cells import Table

if TYPE_CHECKING:
    from beavertui.engine.validation.validate import TaskValidation

COLUMNS = ("id", "label", "verdict", "reference", "broken start", "reference time", "throughput")


def validation_row(r: TaskValidation) -> tuple[str, ...]:
    """One task's row: its verdict (with the reason unless usable), the reference's and the broken start's
    outcome, the reference's time and its throughput against this GPU's ceilings."""
    kind, reason = r.judge()
    verdict = kind.replace("_", " ") + ("" if kind == "usable" else f": {reason}")
    if not r.runnable:
        return (r.task_id, r.label, verdict, "", "", "", "")
    t = (
        ""
        if r.reference_ms is None
        else f"{r.reference_ms:.4f} ms {r.method} CV {100 * (r.reference_cv or 0):.1f}%"
    )
    if r.unstable:
        t += " unstable"
    if r.reference_measured_for:
        t += f" (measured for {r.reference_measured_for})"
    broken = r.broken_category or ""
    if r.broken_speedup is not None:
        broken += f" at {r.broken_speedup:.2f}x"
    thr = []
    if r.tflops is not None:
        thr.append(
            f"{r.tflops:.1f} TFLOP/s"
            + (f" ({100 * r.tflops_fraction:.0f}% bf16)" if r.tflops_fraction else "")
        )
    if r.gbps is not None:
        thr.append(
            f"{r.gbps:.0f} GB/s" + (f" ({100 * r.gbps_fraction:.0f}% copy)" if r.gbps_fraction else "")
        )
    ref = r.reference_category or ("in testbench" if r.reference_kind == "in_binary" else "none")
    return (r.task_id, r.label, verdict, ref, broken, t, ", ".join(thr))


def validation_table(results: Sequence[TaskValidation], where: str) -> Table:
    """The tasks validated on ``where`` (a GPU's slug, or "this machine (no GPU)"), counted by verdict."""
    kinds = [r.verdict for r in results]
    title = (
        f"{kinds.count('usable')} usable, {kinds.count('usable_relabelled')} usable with a corrected label, "
        f"{kinds.count('unusable')} unusable, of {len(results)} tasks on {where}"
    )
    return Table(title, COLUMNS, tuple(validation_row(r) for r in results), keys=1)
