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
Tasks of one run with the same reference, harness and timing configuration (baselines.share_key) have their
reference timed once, on the same GPU signature; the others take that measurement and say for which task it
was made. No printing here.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from queue import Queue
from typing import Literal

from beavertui.engine.corpus import families, harness, verdicts
from beavertui.engine.corpus.load import runnable_here
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.host.ceilings import Ceilings
from beavertui.engine.host.gpu import Machine, clocks
from beavertui.engine.judge.categories import label_agrees, label_category
from beavertui.engine.session.events import Ran, Verdict
from beavertui.engine.stage import stages
from beavertui.engine.timing import baselines
from beavertui.engine.timing.speedup import Timer, adopt_reference_build, time_reference
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain
from beavertui.engine.toolchain.placement import GpuSlots

#: The gate a ``perf_broken`` start must stay below (docs/metrics.md default p).
PERF_GATE = 0.7

#: What a task is good for on a machine.
Kind = Literal["usable", "usable_relabelled", "unusable"]


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
    family: str = ""
    """The family whose reference semantics applied (corpus/families/)."""
    reference_kind: str = "drop_in"
    """drop_in, eager_model, in_binary, none or applied_runner."""
    gpu: str | None = None
    """GPU signature slug the validation ran on."""
    reference_measured_for: str | None = None
    """The task whose reference timing this one took (same reference, harness and timing configuration on
    the same GPU signature: baselines.share_key); None when the reference was timed for this task."""

    @property
    def reference_checked(self) -> bool:
        """Whether the family has a reference that can be run on its own (cutlass's lives in the testbench,
        cudabench has none)."""
        return self.reference_kind in ("drop_in", "eager_model", "applied_runner")

    def judge(self) -> tuple[Kind, str]:
        """(verdict, reason): what the task is good for on this machine.

        Unusable: it cannot run here, its reference fails, or its broken start needs no repair (passes
        unchanged; a perf_broken start that already reaches the gate). A broken start that fails in another
        category than its label is a good task with a wrong label: usable with the observed category."""
        if not self.runnable:
            return "unusable", self.reason or "not runnable"
        if self.reference_checked and self.reference_category != "passed":
            sig = f" ({self.reference_signature})" if self.reference_signature else ""
            return "unusable", f"the reference fails here: {self.reference_category}{sig}"
        if self.broken_category is None:
            return "unusable", "the broken start was not run"
        perf = label_category(self.label) == "perf_broken"
        if self.broken_category == "passed":
            if not perf:
                return "unusable", "the broken start passes unchanged"
            if self.broken_speedup is not None and self.broken_speedup >= PERF_GATE:
                return "unusable", (
                    f"the perf_broken start already reaches {self.broken_speedup:.2f}x (gate {PERF_GATE})"
                )
            if self.broken_speedup is None:
                return "usable", "perf_broken start passes; its speed could not be measured here"
            return "usable", f"perf_broken start passes at {self.broken_speedup:.2f}x"
        if perf or not label_agrees(self.label, self.broken_category):
            return "usable_relabelled", f"observed {self.broken_category}: {self.broken_signature or '-'}"
        return "usable", f"fails as labelled ({self.broken_category})"

    @property
    def verdict(self) -> Kind:
        return self.judge()[0]

    @property
    def verdict_reason(self) -> str:
        return self.judge()[1]

    @property
    def observed_category(self) -> str | None:
        """The broken start's category seen here (the corrected label of a relabelled task)."""
        return self.broken_category

    @property
    def valid(self) -> bool:
        """Usable here (with its label or a corrected one)."""
        return self.verdict != "unusable"


class _PinnedToolchain(LocalToolchain):
    """The local toolchain with every stage on one GPU (``CUDA_VISIBLE_DEVICES``)."""

    def __init__(self, config: LocalConfig, gpu: str) -> None:
        super().__init__(config)
        self.pinned = gpu

    def stage_config(self) -> stages.StageConfig:
        cfg = super().stage_config()
        return replace(cfg, env={**os.environ, "CUDA_VISIBLE_DEVICES": self.pinned})


def _verdict(tool: LocalToolchain, task: Task, code: str, options: AttemptOptions) -> Verdict:
    return _attempt(tool, task, code, options)[0]


def _attempt(tool: LocalToolchain, task: Task, code: str, options: AttemptOptions) -> tuple[Verdict, str]:
    """The verdict of one attempt and its test stage's log ("" when it did not run)."""
    last = None
    log = ""
    for event in tool.attempt(task, code, options):
        if isinstance(event, Ran):
            log = event.result.log
        last = event
    assert isinstance(last, Verdict)
    return last, log


def reusable(task: Task, record: verdicts.VerdictRecord | None) -> bool:
    """Whether a stored verdict's check of the broken start can stand while only the reference is run and
    timed again: its broken start was run, its reference passed and is timed on its own, and it carries no
    reference time yet (a validation that ran with --no-timing)."""
    if record is None or record.observed_category is None or record.reference_ms is not None:
        return False
    if record.reference_kind not in ("drop_in", "eager_model"):
        return False
    return not record.reason.startswith(("the reference fails", "validation failed", "not runnable"))


def check_task(
    task: Task, machine: Machine, tool: LocalToolchain, prebuild: bool = False,
    stored: verdicts.VerdictRecord | None = None, seen: TaskValidation | None = None,
) -> TaskValidation:  # fmt: skip
    """Phase one for one task: build and run the reference and the broken start (no timing).

    ``stored``: a verdict of this task on this GPU (same reference, harness and broken start) whose broken
    start's result is taken as it is (reusable()); only the reference is built and run again. ``seen``: this
    run's own earlier check of the task, whose broken start's result is likewise kept (the reference ran out
    of memory beside other checks; the broken start's run did not)."""
    sem = families.family_of(task)
    slug = machine.gpu.slug if machine.gpu is not None else None
    base = TaskValidation(task.id, task.label, False, family=sem.name, reference_kind=sem.reference, gpu=slug)
    why = runnable_here(task, machine)
    if why is not None:
        return replace(base, reason=why)
    notes: list[str] = []
    plain = AttemptOptions(iteration=1, gate=0.0, time_if_correct=False, sanitize_on_failure=False)
    reference_stands = (
        stored is not None and stored.observed_category is not None and sem.speed == "kernelbench_driver"
    )
    ref_category = ref_signature = None
    if base.reference_checked:
        ref_code = families.reference_submission(task)
        if ref_code is None:
            return replace(base, reason="no reference solution shipped")
        ref_tool = LocalToolchain(
            tool.config, tool.placement
        )  # its own instance: last_workdir is per attempt
        if reference_stands:
            # the stored verdict's reference check passed (reusable()), and nothing is built for the timing
            # of an eager Model: only the timing runs again
            ref_category, ref_signature = "passed", ""
            notes.append(REFERENCE_STANDS)
        else:
            ref = _verdict(ref_tool, task, ref_code, replace(plain, keep_workdir=prebuild))
            ref_category, ref_signature = ref.category, ref.signature
        if prebuild and ref_tool.last_workdir is not None:  # the timing phase reuses this build
            kept = stages.WorkDir(path=ref_tool.last_workdir, task=task, manifest={}, links={})
            if ref_category == "passed" and sem.speed == "interleaved":
                adopt_reference_build(task, tool.config.timing, kept, task.build_command)
            else:
                stages.remove(kept)
    else:
        notes.append(f"reference: {sem.summary}")
    if stored is not None and stored.observed_category is not None:
        return replace(
            base, runnable=True, reference_category=ref_category, reference_signature=ref_signature,
            broken_category=stored.observed_category, broken_signature=stored.evidence,
            label_agrees=label_agrees(task.label, stored.observed_category),
            notes=_unique((*notes, *_carried(stored.notes), _reused_note(stored, not reference_stands))),
        )  # fmt: skip
    if seen is not None and seen.broken_category is not None and sem.speed != "testbench_lines":
        return replace(
            base, runnable=True, reference_category=ref_category, reference_signature=ref_signature,
            broken_category=seen.broken_category, broken_signature=seen.broken_signature,
            label_agrees=label_agrees(task.label, seen.broken_category),
            notes=_unique((*notes, *seen.notes, "broken start's result kept from its first check (it did not run out of memory)")),
        )  # fmt: skip
    broken, log = _attempt(tool, task, task.broken_start(), plain)
    if label_category(task.label) == "illegal_memory_access" and broken.category == "functional_correctness":
        # the label rests on memcheck evidence the plain run cannot show (the sanitizer override of docs/format.md)
        broken, log = _attempt(tool, task, task.broken_start(), replace(plain, sanitize_on_failure=True))
    out = replace(
        base, runnable=True, reference_category=ref_category, reference_signature=ref_signature,
        broken_category=broken.category, broken_signature=broken.signature,
        label_agrees=label_agrees(task.label, broken.category), notes=tuple(notes),
    )  # fmt: skip
    if sem.speed == "testbench_lines":
        lines = families.parse_speed_lines(log)
        if lines.reference is not None:  # the in-binary reference, timed by the broken start's testbench
            out = replace(
                out, method="testbench_lines", reference_ms=lines.reference,
                broken_speedup=lines.speedup if broken.category == "passed" else None,
                notes=(*out.notes, _lines_note(lines)),
            )  # fmt: skip
    return out


def _lines_note(lines: families.SpeedLines) -> str:
    """Where a testbench-lines reference time came from: its own lines, or each size's candidate time times
    its printed speedup (the applied runner prints no reference time)."""
    if lines.reference_ms:
        return f"reference time from the testbench's Ref time lines ({len(lines.reference_ms)} size(s))"
    n = min(len(lines.candidate_ms), len(lines.speedups))
    return f"reference time = the testbench's Kernel time x Speedup lines ({n} size(s); it prints no reference time)"


#: How the note of a reused stored verdict begins (_reused_note).
REUSED = "broken start's result reused from the verdict stored"

#: The note of a kernelbench reference whose stored check stands (check_task).
REFERENCE_STANDS = "the stored verdict's reference check (passed) stands"

#: Notes of a stored verdict that describe its own reference run or timing, which a run reusing the verdict
#: does again and notes anew: never carried over (a verdict reused again and again would repeat them).
_NOT_CARRIED = (REUSED, REFERENCE_STANDS, "reference not timed")


def _reused_note(stored: verdicts.VerdictRecord, reference_run: bool = True) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stored.measured_at))
    again = "reference run and timed again" if reference_run else "reference timed again"
    return f"{REUSED} {when}; {again}"


def _carried(notes: Iterable[str]) -> list[str]:
    """The notes of a stored verdict that still hold when its broken start's result is reused: those of its
    checks, without its own reuse note and those of its reference's run and timing (this run's say them)."""
    return [n for n in notes if not n.startswith(_NOT_CARRIED)]


def _unique(notes: Iterable[str]) -> tuple[str, ...]:
    """Notes in order without exact repeats."""
    return tuple(dict.fromkeys(notes))


class SharedTimings:
    """The reference timings of one validation by GPU signature and share key (baselines.share_key): tasks
    with the same key have their reference timed once, whichever thread and GPU times it first."""

    @dataclass
    class Slot:
        lock: threading.Lock = field(default_factory=threading.Lock)
        """Held while the first task of the key times its reference; the others wait for it."""
        baseline: baselines.Baseline | None = None
        """The measurement, once made (None: not yet, or it failed and the next task tries)."""
        note: str | None = None
        """The measurement's own note (time_reference's)."""

    def __init__(self, stored: bool = False) -> None:
        self.stored = stored
        """Take a baseline stored by an earlier run (baselines.load: this task's, or one measured for a task
        with the same share key on this GPU signature) instead of timing again (``--reuse-checks``)."""
        self._guard = threading.Lock()
        self._slots: dict[tuple[str, str], SharedTimings.Slot] = {}

    def slot(self, slug: str, key: str) -> SharedTimings.Slot:
        with self._guard:
            return self._slots.setdefault((slug, key), SharedTimings.Slot())


def _share_key(task: Task, checked: TaskValidation) -> str | None:
    """The share key of a task whose reference timing phase two would measure; None when it measures none or
    its files cannot be read (time_task says why)."""
    if not (checked.runnable and checked.reference_checked and checked.reference_category == "passed"):
        return None
    try:
        return baselines.share_key(task)
    except OSError:
        return None


def time_task(
    task: Task, checked: TaskValidation, machine: Machine, tool: LocalToolchain, ceilings: Ceilings | None,
    cache: Path | None = None, shared: SharedTimings | None = None, timer: Timer | None = None,
) -> TaskValidation:  # fmt: skip
    """Phase two for one task, alone on the GPU: reference timing, baseline, perf_broken speedup.

    ``shared``: the run's timings by share key; a task whose key was timed already for another task of the run
    on this GPU signature takes that measurement (reference_measured_for, and a note) instead of timing it.
    ``timer``: the task's timer made beforehand (its kernelbench driver started while the task before it was
    timed: _timed_in_turn); the caller closes it."""
    out = checked
    if not checked.runnable or machine.gpu is None:
        return out
    if not checked.reference_checked or checked.reference_category != "passed":
        return out
    notes = list(checked.notes)
    harness_h = harness.harness_hash(task)
    slot = shared.slot(machine.gpu.slug, baselines.share_key(task, harness_h)) if shared is not None else None
    with slot.lock if slot is not None else nullcontext():
        if slot is not None and slot.baseline is None and shared is not None and shared.stored:
            found = baselines.load(task, machine.gpu, harness_h, cache)
            if found is not None:
                when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(found.measured_at))
                slot.baseline = found.model_copy(update={"note": None})
                slot.note = f"reference time reused from the baseline stored {when} on this GPU signature"
        if slot is not None and slot.baseline is not None:
            first = slot.baseline
            b = baselines.as_found_for(first, task)
            timing_note = slot.note
        else:
            cfg = tool.stage_config()
            try:
                rt = time_reference(timer or Timer(task, cfg, tool.config.timing))
            except BeaverError as exc:
                notes.append(f"reference not timed: {exc}")
                if label_category(task.label) == "perf_broken" and checked.broken_category == "passed":
                    out = _perf_broken(task, out, tool, notes)
                return replace(out, notes=tuple(notes))
            seconds = rt.median_ms * 1e-3
            tflops = task.work_flop / seconds / 1e12 if task.work_flop and seconds > 0 else None
            gbps = task.work_bytes / seconds / 1e9 if task.work_bytes and seconds > 0 else None
            b = baselines.Baseline(
                task_id=task.id, gpu=machine.gpu, method=rt.method, median_ms=rt.median_ms, cv=rt.cv,
                samples=rt.samples, unstable=rt.unstable, reference_hash=harness.reference_hash(task),
                harness_hash=harness_h, clocks=clocks(), tflops=tflops, gbps=gbps,
            )  # fmt: skip
            timing_note = rt.note
            if slot is not None:
                slot.baseline, slot.note = b, rt.note
    if timing_note:
        notes.append(timing_note)
    if b.note:
        notes.append(b.note)
    tf_frac = b.tflops / ceilings.bf16_tflops if b.tflops and ceilings and ceilings.bf16_tflops else None
    bw_frac = b.gbps / ceilings.copy_gbps if b.gbps and ceilings and ceilings.copy_gbps else None
    path = baselines.save(task, b, cache)
    out = replace(
        out, method=b.method, reference_ms=b.median_ms, reference_cv=b.cv, unstable=b.unstable,
        tflops=b.tflops, gbps=b.gbps, tflops_fraction=tf_frac, gbps_fraction=bw_frac, baseline_path=str(path),
        reference_measured_for=b.task_id if b.task_id != task.id else None,
    )  # fmt: skip
    if label_category(task.label) == "perf_broken" and checked.broken_category == "passed":
        out = _perf_broken(task, out, tool, notes)
    return replace(out, notes=tuple(notes))


def _perf_broken(task: Task, out: TaskValidation, tool: LocalToolchain, notes: list[str]) -> TaskValidation:
    """A passing perf_broken start timed against the reference at the gate (notes extended in place)."""
    timed = _verdict(
        tool, task, task.broken_start(),
        AttemptOptions(iteration=1, gate=PERF_GATE, time_if_correct=True, sanitize_on_failure=False),
    )  # fmt: skip
    if timed.speedup is None:
        notes.append(
            "perf_broken start not timed" + (f": {timed.speedup_note}" if timed.speedup_note else "")
        )
        return replace(out, label_agrees=False)
    below = timed.speedup < PERF_GATE
    if not below:
        notes.append(f"perf_broken start reaches {timed.speedup:.2f}x, not below the {PERF_GATE} gate")
    return replace(out, broken_speedup=timed.speedup, label_agrees=below)


def validate(
    tasks: list[Task], machine: Machine, config: LocalConfig | None = None, timing: bool = True,
    ceilings: Ceilings | None = None, workers: int | None = None,
    on_checked: Callable[[TaskValidation, int, int], None] | None = None, gpus: list[str] | None = None,
    reuse_checks: bool = False, gpu_jobs: int | None = None,
) -> Iterator[TaskValidation]:  # fmt: skip
    """Validate tasks: checks in parallel, then timing one task at a time per GPU; yielded in task order
    (without timing, as each task's checks finish).

    ``on_checked(result, done, total)`` is called (from the calling thread) as phase-one results arrive.
    ``gpus``: device indices to time on, one task at a time on each (default: whatever the environment
    makes visible, as one GPU). Every timed pair (reference and candidate) stays on one GPU.
    ``reuse_checks``: a task whose stored verdict on this GPU was checked but not timed (reusable()) keeps
    its broken start's result; its reference is run again and timed, or takes the time an earlier run stored on
    this GPU signature for it or for a task with the same share key (baselines.load).
    ``gpu_jobs``: at most this many of the checks' GPU stages (test, sanitizer and profiler runs) at once,
    while up to ``workers`` checks build (default: no limit beyond ``workers``). For checks whose GPU stage
    needs much memory (kernelbench's) and whose builds are long.
    """
    n = workers or max(1, min(8, os.cpu_count() or 1))
    slots = threading.BoundedSemaphore(gpu_jobs) if gpu_jobs is not None and gpu_jobs < n else None
    tool = LocalToolchain(config, GpuSlots(slots))
    timed = timing and machine.gpu is not None
    cache = tool.config.timing.cache
    stored: dict[str, verdicts.VerdictRecord] = {}
    if reuse_checks and timed and machine.gpu is not None:
        for t in tasks:
            rec = verdicts.load(t, machine.gpu.slug, cache, known=False)
            if rec is not None and reusable(t, rec):
                stored[t.id] = rec

    def kept(task: Task, r: TaskValidation) -> TaskValidation:
        if machine.gpu is not None:
            try:
                verdicts.save(task, record_of(replace(r, gpu=machine.gpu.slug)), cache)
            except OSError as exc:
                r = replace(r, notes=(*r.notes, f"verdict not stored: {exc}"))
        return r

    checked: list[TaskValidation] = []
    with ThreadPoolExecutor(n, thread_name_prefix="beaver-validate") as pool:
        futures: list[Future[TaskValidation]] = [
            pool.submit(_guarded, check_task, t, machine, tool, timed, stored.get(t.id)) for t in tasks
        ]
        if not timed:
            # Nothing waits for the GPU alone: each result is final when its checks are, so it is yielded
            # (and stored) at once, and a validation cut short keeps every task it finished. A result that
            # ran out of GPU memory while other checks shared the GPU waits to be checked again alone.
            of = {fut: task for fut, task in zip(futures, tasks, strict=True)}
            again: list[tuple[Task, TaskValidation]] = []
            for done, fut in enumerate(as_completed(futures), 1):
                if on_checked is not None:
                    on_checked(fut.result(), done, len(tasks))
                if _out_of_memory(fut.result()) and len(tasks) > 1:
                    again.append((of[fut], fut.result()))
                else:
                    yield kept(of[fut], fut.result())
            for task, first in again:
                yield kept(task, _alone(task, machine, tool, timed, first))
            return
        for done, fut in enumerate(futures, 1):
            checked.append(fut.result())
            if on_checked is not None:
                on_checked(checked[-1], done, len(tasks))
    if len(tasks) > 1:
        checked = [
            _alone(t, machine, tool, timed, c) if _out_of_memory(c) else c
            for t, c in zip(tasks, checked, strict=True)
        ]
    for task, c in zip(tasks, checked, strict=True):
        # stored now, untimed: a validation cut during its timing phase keeps its checks (--reuse-checks
        # times them later); each is stored again with its timing below
        if c.runnable and c.observed_category is not None and not _out_of_memory(c):
            kept(task, c)
    # tasks with one share key: their reference is timed once (with reuse_checks, not at all when an earlier
    # run stored it on this GPU signature)
    shared = SharedTimings(stored=reuse_checks)
    if not gpus or len(gpus) < 2:
        warm = _warmer(tasks, checked, machine, tool, cache, reuse_checks)

        def time_one(i: int, timer: Timer | None) -> TaskValidation:
            return _timed(tasks[i], checked[i], machine, tool, ceilings, cache, shared, timer)

        for i, r in _timed_in_turn(len(tasks), warm, time_one):
            yield kept(tasks[i], r)
        return
    free: Queue[str] = Queue()
    for g in gpus:
        free.put(g)

    def on_a_gpu(task: Task, c: TaskValidation) -> TaskValidation:
        g = free.get()
        try:
            pinned = _PinnedToolchain(tool.config, g)
            return _timed(task, c, machine, pinned, ceilings, cache, shared)
        finally:
            free.put(g)

    # the tasks of one share key are timed one after the other by one worker: the first times the reference,
    # the others take its measurement, and no GPU waits idle for a measurement made on another
    groups: dict[object, list[int]] = {}
    for i, (task, c) in enumerate(zip(tasks, checked, strict=True)):
        groups.setdefault(_share_key(task, c) or i, []).append(i)
    results: list[Future[TaskValidation]] = [Future() for _ in tasks]

    def time_group(members: list[int]) -> None:
        for n, i in enumerate(members):
            try:
                results[i].set_result(on_a_gpu(tasks[i], checked[i]))
            except BaseException as exc:  # the rest of the group waits for nothing
                for j in members[n:]:
                    results[j].set_exception(exc)
                raise

    with ThreadPoolExecutor(len(gpus), thread_name_prefix="beaver-timing") as pool:
        for members in groups.values():
            pool.submit(time_group, members)
        for task, fut in zip(tasks, results, strict=True):
            yield kept(task, fut.result())


def _timed_in_turn(
    n: int, warm: Callable[[int], Timer | None], timed: Callable[[int, Timer | None], TaskValidation]
) -> Iterator[tuple[int, TaskValidation]]:
    """``timed(i, timer)`` for each task in turn, task ``i + 1``'s timer made (``warm``: its kernelbench driver
    started, importing torch with no GPU visible) before task ``i`` is timed, so that the import does not
    hold the GPU. Every timer made is closed once its task is timed, or when the turn is cut."""
    ahead: Timer | None = warm(0) if n else None
    try:
        for i in range(n):
            now, ahead = ahead, None
            try:
                ahead = warm(i + 1) if i + 1 < n else None
                yield i, timed(i, now)
            finally:
                if now is not None:
                    now.close()
    finally:
        if ahead is not None:
            ahead.close()


def _warmer(
    tasks: list[Task], checked: list[TaskValidation], machine: Machine, tool: LocalToolchain, cache: Path | None,
    reuse_checks: bool,
) -> Callable[[int], Timer | None]:  # fmt: skip
    """For _timed_in_turn: a kernelbench task about to have its reference timed gets a timer whose driver is
    started ahead (not waited for); none for a task that will not be timed (its check did not pass, an earlier
    task of the run has its share key, or a stored baseline stands for it) or of another family."""
    keys: set[str] = set()

    def warm(i: int) -> Timer | None:
        key = _share_key(tasks[i], checked[i])  # None: no reference timing for this task
        if key is None or key in keys or machine.gpu is None:
            return None
        keys.add(key)
        task = tasks[i]
        timer = Timer(task, tool.stage_config(), tool.config.timing)
        if not timer.warms:
            return None
        if reuse_checks and baselines.load(task, machine.gpu, harness.harness_hash(task), cache) is not None:
            return None
        try:
            timer.prepare_reference(wait=False)
        except (BeaverError, OSError):
            timer.close()
            return None
        return timer

    return warm


def _out_of_memory(r: TaskValidation) -> bool:
    return "out_of_memory" in (r.reference_category, r.broken_category)


def _alone(
    task: Task, machine: Machine, tool: LocalToolchain, prebuild: bool, first: TaskValidation
) -> TaskValidation:
    """A task checked again with nothing else on the GPU (it ran out of memory beside other checks). Only the
    side that ran out of memory runs again: a broken start that ran to its own end keeps its result (its
    build and run are the costly part of a kernelbench check)."""
    seen = first if first.broken_category not in (None, "out_of_memory") else None
    r = _guarded(check_task, task, machine, tool, prebuild, None, seen)
    return replace(r, notes=(*r.notes, "checked again alone: it ran out of GPU memory beside other checks"))


def _guarded(
    check: Callable[..., TaskValidation], task: Task, machine: Machine, tool: LocalToolchain, prebuild: bool,
    stored: verdicts.VerdictRecord | None = None, seen: TaskValidation | None = None,
) -> TaskValidation:  # fmt: skip
    """Phase one of a task; an unexpected failure makes that task unusable, never stops the others."""
    try:
        return check(task, machine, tool, prebuild, stored, seen)
    except Exception as exc:  # one task's crash must not end the validation of the rest
        sem = families.family_of(task)
        why = f"validation failed: {type(exc).__name__}: {exc}"
        return TaskValidation(task.id, task.label, False, why, family=sem.name, reference_kind=sem.reference)


def _timed(
    task: Task, c: TaskValidation, machine: Machine, tool: LocalToolchain, ceilings: Ceilings | None,
    cache: Path | None, shared: SharedTimings | None = None, timer: Timer | None = None,
) -> TaskValidation:  # fmt: skip
    try:
        return time_task(task, c, machine, tool, ceilings, cache, shared, timer)
    except Exception as exc:  # a timing crash costs this task its reference time only
        return replace(c, notes=(*c.notes, f"reference not timed: {type(exc).__name__}: {exc}"))


def record_of(r: TaskValidation) -> verdicts.VerdictRecord:
    """The stored form of a validation result."""
    kind, reason = r.judge()
    return verdicts.VerdictRecord(
        task_id=r.task_id, gpu=r.gpu or "", verdict=kind, reason=reason, label=r.label,
        observed_category=r.broken_category, evidence=r.broken_signature, family=r.family,
        reference_kind=r.reference_kind, reference_ms=r.reference_ms, method=r.method, notes=list(_unique(r.notes)),
    )  # fmt: skip
