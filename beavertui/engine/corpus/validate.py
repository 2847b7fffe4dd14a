"""`corpus validate`: is each task valid on this GPU (docs/format.md, Tasks)?

Per task: the reference must pass, the broken start must fail with its labelled category (a
``perf_broken`` start must pass and time below the gate against the reference); the reference is timed
(method named), its achieved throughput compared with the GPU's measured ceilings when input.json gives
the work, and the baseline stored under the GPU signature.

Two phases, so that a corpus validates in minutes rather than in an hour. First every task's reference
and broken start are built and run correctly in a thread pool (builds use the CPU cores, correctness runs
share the GPU, as in batch runs); compute-sanitizer runs only where the label needs its evidence (a broken
start labelled ``illegal_memory_access`` whose plain run does not show it). Then each task is timed alone,
one after the other, with nothing else on the GPU. Results are yielded in task order as timing finishes.
No printing here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from queue import Queue

from beavertui.engine.timing import baselines
from beavertui.engine.toolchain import stages as runner
from beavertui.engine.judge.categories import label_agrees, label_category
from beavertui.engine.host.ceilings import Ceilings
from beavertui.engine.corpus.load import runnable_here
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import Verdict
from beavertui.engine.host.gpu import Machine, clocks
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain
from beavertui.engine.corpus.task import Task
from beavertui.engine.timing.speedup import Timer, adopt_reference_build, time_reference
from beavertui.engine.toolchain.base import AttemptOptions

#: The gate a ``perf_broken`` start must stay below (docs/metrics.md default p).
PERF_GATE = 0.7


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
    broken_speedup: float | None = None
    """perf_broken starts only: reference / broken-start time, interleaved (x, dimensionless)."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def valid(self) -> bool:
        """Runnable, the reference passes, the broken start fails as labelled."""
        return bool(self.runnable and self.reference_category == "passed" and self.label_agrees)


class _PinnedToolchain(LocalToolchain):
    """The local toolchain with every stage on one GPU (``CUDA_VISIBLE_DEVICES``)."""

    def __init__(self, config: LocalConfig, gpu: str) -> None:
        super().__init__(config)
        self.pinned = gpu

    def _runner_config(self) -> runner.RunnerConfig:
        cfg = super()._runner_config()
        return replace(cfg, env={**os.environ, "CUDA_VISIBLE_DEVICES": self.pinned})


def _verdict(tool: LocalToolchain, task: Task, code: str, options: AttemptOptions) -> Verdict:
    last = None
    for event in tool.attempt(task, code, options):
        last = event
    assert isinstance(last, Verdict)
    return last


def check_task(task: Task, machine: Machine, tool: LocalToolchain, prebuild: bool = False) -> TaskValidation:
    """Phase one for one task: build and run the reference and the broken start (no timing)."""
    why = runnable_here(task, machine)
    if why is not None:
        return TaskValidation(task.id, task.label, False, why)
    ref_code = task.reference()
    if ref_code is None:
        return TaskValidation(task.id, task.label, False, "no reference solution shipped")
    plain = AttemptOptions(iteration=1, gate=0.0, time_if_correct=False, sanitize_on_failure=False)
    ref_tool = LocalToolchain(tool.config)  # its own instance: last_workdir is per attempt
    ref = _verdict(ref_tool, task, ref_code, replace(plain, keep_workdir=prebuild))
    if prebuild and ref_tool.last_workdir is not None:  # the timing phase reuses this build
        kept = runner.WorkDir(path=ref_tool.last_workdir, task=task, manifest={}, links={})
        if ref.category == "passed":
            adopt_reference_build(task, tool.config.timing, kept, task.build_command)
        else:
            runner.remove(kept)
    broken = _verdict(tool, task, task.broken_start(), plain)
    if label_category(task.label) == "illegal_memory_access" and broken.category == "functional_correctness":
        # the label rests on memcheck evidence the plain run cannot show (docs/format.md (categories) override)
        broken = _verdict(tool, task, task.broken_start(), replace(plain, sanitize_on_failure=True))
    return TaskValidation(
        task.id, task.label, True, None, ref.category, ref.signature, broken.category, broken.signature,
        label_agrees(task.label, broken.category),
    )  # fmt: skip


def time_task(
    task: Task, checked: TaskValidation, machine: Machine, tool: LocalToolchain, ceilings: Ceilings | None,
    cache: Path | None = None,
) -> TaskValidation:  # fmt: skip
    """Phase two for one task, alone on the GPU: reference timing, baseline, perf_broken speedup."""
    out = checked
    if not checked.runnable or checked.reference_category != "passed" or machine.gpu is None:
        return out
    notes = list(checked.notes)
    cfg = tool._runner_config()
    try:
        rt = time_reference(Timer(task, cfg, tool.config.timing))
    except BeaverError as exc:
        return replace(out, notes=(*notes, f"reference not timed: {exc}"))
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
    out = replace(
        out, method=rt.method, reference_ms=rt.median_ms, reference_cv=rt.cv, unstable=rt.unstable,
        tflops=tflops, gbps=gbps, tflops_fraction=tf_frac, gbps_fraction=bw_frac, baseline_path=str(path),
    )  # fmt: skip
    if label_category(task.label) == "perf_broken" and checked.broken_category == "passed":
        timed = _verdict(
            tool, task, task.broken_start(),
            AttemptOptions(iteration=1, gate=PERF_GATE, time_if_correct=True, sanitize_on_failure=False),
        )  # fmt: skip
        if timed.speedup is None:
            notes.append("perf_broken start not timed")
            out = replace(out, label_agrees=False)
        else:
            below = timed.speedup < PERF_GATE
            if not below:
                notes.append(
                    f"perf_broken start reaches {timed.speedup:.2f}x, not below the {PERF_GATE} gate"
                )
            out = replace(out, broken_speedup=timed.speedup, label_agrees=below)
    return replace(out, notes=tuple(notes))


def validate(
    tasks: list[Task], machine: Machine, config: LocalConfig | None = None, timing: bool = True,
    ceilings: Ceilings | None = None, workers: int | None = None,
    on_checked: Callable[[TaskValidation, int, int], None] | None = None, gpus: list[str] | None = None,
) -> Iterator[TaskValidation]:  # fmt: skip
    """Validate tasks: checks in parallel, then timing one task at a time per GPU; yielded in task order.

    ``on_checked(result, done, total)`` is called (from the calling thread) as phase-one results arrive.
    ``gpus``: device indices to time on, one task at a time on each (default: whatever the environment
    makes visible, as one GPU). Every timed pair (reference and candidate) stays on one GPU.
    """
    tool = LocalToolchain(config)
    timed = timing and machine.gpu is not None
    n = workers or max(1, min(8, os.cpu_count() or 1))
    checked: list[TaskValidation] = []
    with ThreadPoolExecutor(n, thread_name_prefix="beaver-validate") as pool:
        futures: list[Future[TaskValidation]] = [
            pool.submit(check_task, t, machine, tool, timed) for t in tasks
        ]
        for done, fut in enumerate(futures, 1):
            checked.append(fut.result())
            if on_checked is not None:
                on_checked(checked[-1], done, len(tasks))
    if not timed:
        yield from checked
        return
    if not gpus or len(gpus) < 2:
        for task, c in zip(tasks, checked, strict=True):
            yield time_task(task, c, machine, tool, ceilings, tool.config.timing.cache)
        return
    free: Queue[str] = Queue()
    for g in gpus:
        free.put(g)

    def on_a_gpu(task: Task, c: TaskValidation) -> TaskValidation:
        g = free.get()
        try:
            pinned = _PinnedToolchain(tool.config, g)
            return time_task(task, c, machine, pinned, ceilings, tool.config.timing.cache)
        finally:
            free.put(g)

    with ThreadPoolExecutor(len(gpus), thread_name_prefix="beaver-timing") as pool:
        timed_futures = [pool.submit(on_a_gpu, t, c) for t, c in zip(tasks, checked, strict=True)]
        for fut in timed_futures:
            yield fut.result()
