"""cudabench: no reference; a run's verdict is the ``T``/``F`` its comparison script prints, not its exit status
(docs/release-families.md, cudabench)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from beavertui.engine.corpus.families.base import Family
from beavertui.engine.corpus.task import Task

_TF = re.compile(r"^\s*([TF])\s*$", re.M)


def cudabench_verdict(log: str) -> bool | None:
    """The last ``T``/``F`` line compare_output.py printed (True, False), or None when it printed neither.

    The release's comparison script always exits 0, so its exit status says nothing; this line does."""
    hits = _TF.findall(log)
    return None if not hits else hits[-1] == "T"


@dataclass(frozen=True)
class CudaBench(Family):
    """compare_output.py's T/F is the only oracle; there is no reference to submit or to time against."""

    def reference_submission(self, task: Task) -> str | None:
        return None

    def why_no_reference_submission(self, task: Task) -> str:
        return "the family has no reference solution (reference.cu only points at the oracle)"

    def oracle_failure(self, task: Task, rc: int | None, log: str) -> str | None:
        """A run that exited 0 is wrong unless compare_output printed ``T`` last."""
        if rc != 0:
            return None
        seen = cudabench_verdict(log)
        if seen is True:
            return None
        if seen is False:
            return "compare_output: F (output differs from the reference output)"
        return "compare_output printed neither T nor F"


CUDABENCH = CudaBench(
    "cudabench",
    "none",
    "none",
    "none: compare_output.py's T/F is the only oracle",
    names=frozenset({"cudabench"}),
)
