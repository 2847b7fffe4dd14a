"""Which TimingMethod times a task: one registration line per method name (TimingResult.method).

Adding a timing method is one new module with a TimingMethod subclass and one line in METHODS; a family
names the method it calls for through its ``speed`` (default_method)."""

from __future__ import annotations

from collections.abc import Callable

from beavertui.engine.corpus import families
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.timing.inprocess import InProcess
from beavertui.engine.timing.interleaved import Interleaved
from beavertui.engine.timing.kernelbench import KernelbenchDriver
from beavertui.engine.timing.lines import TestbenchLines
from beavertui.engine.timing.method import NoReference, TimingMethod
from beavertui.engine.timing.runs import TimedRuns

#: Method name -> what makes it over a timer's shared runs.
METHODS: dict[str, Callable[[TimedRuns, str], TimingMethod]] = {
    "beaver_time_ms": InProcess,
    "cupti": Interleaved,
    "ncu": Interleaved,
    "torch_events_l2flush_interleaved": KernelbenchDriver,
    "testbench_lines": TestbenchLines,
    "none": NoReference,
}

#: The method each family's ``speed`` (families.Family.speed) calls for; ``interleaved`` picks by the task:
#: the native timing contract where the task has a benchmark command, else CUPTI.
SPEED_METHODS = {
    "kernelbench_driver": "torch_events_l2flush_interleaved",
    "testbench_lines": "testbench_lines",
    "none": None,
}


def default_method(task: Task) -> str | None:
    """The timing method a task's family calls for (None: the family has no reference to time against)."""
    speed = families.family_of(task).speed
    if speed in SPEED_METHODS:
        return SPEED_METHODS[speed]
    return "beaver_time_ms" if task.benchmark_command else "cupti"


def method_for(name: str, ctx: TimedRuns) -> TimingMethod:
    """The method called ``name`` over ``ctx``."""
    make = METHODS.get(name)
    if make is None:
        raise BeaverError(f"unknown timing method {name!r}: expected one of {', '.join(sorted(METHODS))}")
    return make(ctx, name)
