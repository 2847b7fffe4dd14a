"""cutlass: the reference is the CUTLASS kernel compiled into the testbench; speed from the testbench's own
``Ref time`` / ``Kernel time`` / ``Speedup`` lines (docs/release-families.md, cutlass)."""

from __future__ import annotations

from dataclasses import dataclass

from beavertui.engine.corpus.families.base import Family
from beavertui.engine.corpus.task import Task


@dataclass(frozen=True)
class Cutlass(Family):
    """The reference lives inside the testbench binary: there is none a model could submit."""

    def reference_submission(self, task: Task) -> str | None:
        return None

    def why_no_reference_submission(self, task: Task) -> str:
        return (
            "the reference is the CUTLASS kernel inside the testbench, not a solution.h a model could submit"
        )


CUTLASS = Cutlass(
    "cutlass", "in_binary", "testbench_lines",
    "the CUTLASS kernel compiled into the testbench; its Ref time / Kernel time / Speedup lines",
    libraries=frozenset({"cutlass"}), names=frozenset({"cutlass"}),
)  # fmt: skip
