"""`corpus validate`: is each task valid on this GPU (shared/spec/corpus.md, Validation)?

Per task: the reference must pass, the broken start must fail and its observed category is recorded
next to its label; the reference is timed (method named), its achieved throughput compared with the
GPU's measured ceilings when input.json gives the work, and the baseline stored under the GPU
signature. Results are yielded task by task so a front end can show progress. No printing here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from beavertui.engine import baselines, runner
from beavertui.engine.categories import label_agrees
from beavertui.engine.ceilings import Ceilings
from beavertui.engine.corpus import runnable_here
from beavertui.engine.errors import BeaverError
from beavertui.engine.events import Verdict
from beavertui.engine.gpu import Machine, clocks
from beavertui.engine.localtool import LocalConfig, LocalToolchain
from beavertui.engine.task import Task
from beavertui.engine.timing import Timer, time_reference
from beavertui.engine.toolchain import AttemptOptions


@dataclass(frozen=True)
class TaskValidation:
    """The validation of one task on this machine."""

    task_id: str
    label: str
    runnable: bool
    reason: str | None = None
    reference_category: str | None = None
    reference_signature: str | None = None
    broken_category: str | None = None
    broken_signature: str | None = None
    label_agrees: bool | None = None
    method: str | None = None
    reference_ms: float | None = None
    reference_cv: float | None = None
    unstable: bool = False
    tflops: float | None = None
    gbps: float | None = None
    tflops_fraction: float | None = None
    gbps_fraction: float | None = None
    baseline_path: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def valid(self) -> bool:
        """Runnable, reference passes, broken start fails."""
        return (
            self.runnable
            and self.reference_category == "passed"
            and self.broken_category not in (None, "passed")
        )


def _verdict(tool: LocalToolchain, task: Task, code: str) -> Verdict:
    options = AttemptOptions(iteration=1, gate=0.0, time_if_correct=False)
    last = None
    for event in tool.attempt(task, code, options):
        last = event
    assert isinstance(last, Verdict)
    return last


def validate_task(
    task: Task, machine: Machine, tool: LocalToolchain, ceilings: Ceilings | None, timing: bool = True,
    cache: Path | None = None,
) -> TaskValidation:  # fmt: skip
    """Validate one task (see module docstring)."""
    why = runnable_here(task, machine)
    if why is not None:
        return TaskValidation(task.id, task.label, False, why)
    ref_code = task.reference()
    if ref_code is None:
        return TaskValidation(task.id, task.label, False, "no reference solution shipped")
    ref = _verdict(tool, task, ref_code)
    broken = _verdict(tool, task, task.broken_start())
    out = TaskValidation(
        task.id, task.label, True, None, ref.category, ref.signature, broken.category, broken.signature,
        label_agrees(task.label, broken.category),
    )  # fmt: skip
    if not timing or ref.category != "passed" or machine.gpu is None:
        return out
    notes: list[str] = []
    cfg = tool._runner_config()
    try:
        rt = time_reference(Timer(task, cfg, tool.config.timing))
    except BeaverError as exc:
        return _replace(out, notes=(f"reference not timed: {exc}",))
    if rt.note:
        notes.append(rt.note)
    seconds = rt.median_ms * 1e-3
    tflops = task.work_flop / seconds / 1e12 if task.work_flop and seconds > 0 else None
    gbps = task.work_bytes / seconds / 1e9 if task.work_bytes and seconds > 0 else None
    tf_frac = tflops / ceilings.bf16_tflops if tflops and ceilings and ceilings.bf16_tflops else None
    bw_frac = gbps / ceilings.copy_gbps if gbps and ceilings and ceilings.copy_gbps else None
    b = baselines.Baseline(
        task_id=task.id, gpu=machine.gpu, method=rt.method, median_ms=rt.median_ms, cv=rt.cv, samples=rt.samples,
        unstable=rt.unstable, reference_hash=baselines.reference_hash(task), harness_hash=runner.harness_hash(task),
        clocks=clocks(), tflops=tflops, gbps=gbps,
    )  # fmt: skip
    path = baselines.save(task, b, cache)
    return _replace(
        out, method=rt.method, reference_ms=rt.median_ms, reference_cv=rt.cv, unstable=rt.unstable,
        tflops=tflops, gbps=gbps, tflops_fraction=tf_frac, gbps_fraction=bw_frac, baseline_path=str(path),
        notes=tuple(notes),
    )  # fmt: skip


def _replace(v: TaskValidation, **changes: object) -> TaskValidation:
    from dataclasses import replace

    return replace(v, **changes)  # type: ignore[arg-type]


def validate(
    tasks: list[Task], machine: Machine, config: LocalConfig | None = None, timing: bool = True,
    ceilings: Ceilings | None = None,
) -> Iterator[TaskValidation]:  # fmt: skip
    """Validate tasks one by one."""
    tool = LocalToolchain(config)
    for task in tasks:
        yield validate_task(task, machine, tool, ceilings, timing, tool.config.timing.cache)
