"""A task never validated on this GPU is validated by the batch that runs it, not by a run before it.

A session's check of the broken start (loop/run.py, made before the first turn) already runs the broken
start; what a validation adds is one correctness run of the family's reference submission, once per task
and GPU. ``UsableCheck`` makes it for the first session of a task that has no stored verdict here (neither
this machine's nor the package's known set, corpus/verdicts.py), judges the task as ``corpus validate``
does (TaskValidation.judge) and, on a machine that keeps verdicts, stores the record, with the reference's
run time, so later batches skip the task up front and limit its runs (corpus/run_limit.py). A session of an
unusable task ends before its first turn (stop reason ``unusable``, with the reason); it has no attempt, so
``metrics`` leaves the task out of every rate and says why. A task with a stored verdict is not checked: the
batch applied it already (or was told to run unusable tasks anyway, ``--all-tasks``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from beavertui.engine.corpus import families, verdicts
from beavertui.engine.corpus.harness import harness_hash, reference_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import Ran, Verdict
from beavertui.engine.toolchain.base import AttemptOptions, Toolchain
from beavertui.engine.validation.validate import TaskValidation, record_of

#: The note of a verdict stored by a batch's own check.
NOTE = "checked by a batch on this GPU: its sessions' check of the broken start and one run of the reference"

Usable = Callable[[Task, Verdict | None], str | None]
"""(task, the verdict of the session's check of its broken start, or None) -> why the task is unusable on
this GPU, or None."""


class UsableCheck:
    """The check of one toolchain's GPU, shared by every session of a batch (each task checked once)."""

    def __init__(self, toolchain: Toolchain) -> None:
        self.toolchain = toolchain
        self._lock = threading.Lock()
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._seen: dict[tuple[str, ...], str | None] = {}
        self._reference: dict[tuple[str, ...], tuple[TaskValidation | None, float | None]] = {}
        self.checked: list[str] = []
        """Task ids whose reference this check ran, in order (at most once each)."""

    def __call__(self, task: Task, broken: Verdict | None) -> str | None:
        key = self._key(task)
        if key is None:
            return None  # no GPU, or a verdict stored for it
        with self._lock_of(key):
            if key not in self._seen:
                self._seen[key] = self._check(task, key, broken)
            return self._seen[key]

    def reference_run_s(self, task: Task) -> float | None:
        """Run the task's reference here now (once per task and GPU; what ``__call__`` then judges with),
        when its GPU has no stored verdict for it: the seconds of its correctness run, or None (not run, or
        it failed). A session calls this before the check of its broken start, so that a broken start that
        hangs is stopped by a limit from this run, not by the task's flat one."""
        key = self._key(task)
        if key is None:
            return None
        with self._lock_of(key):
            if key not in self._reference:
                self._reference[key] = self._run_reference(task, key[0])
            return self._reference[key][1]

    def _key(self, task: Task) -> tuple[str, ...] | None:
        gpu = self.toolchain.gpu()
        if gpu is None:
            return None  # no GPU, no verdict to keep for it
        cache = getattr(self.toolchain, "cache_root", None)
        if verdicts.load(task, gpu.slug, cache) is not None:
            return None
        return (gpu.slug, task.id, harness_hash(task), reference_hash(task))

    def _lock_of(self, key: tuple[str, ...]) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(key, threading.Lock())

    def _run_reference(self, task: Task, gpu: str) -> tuple[TaskValidation | None, float | None]:
        """The validation so far after one run of the reference (None: the reference cannot be run here),
        and its correctness run's seconds."""
        sem = families.family_of(task)
        base = TaskValidation(
            task.id, task.label, True, family=sem.name, reference_kind=sem.reference, gpu=gpu, notes=(NOTE,)
        )
        run_s: float | None = None
        code = families.reference_submission(task) if base.reference_checked else None
        if code is not None and _judges(self.toolchain, task, code):
            self.checked.append(task.id)
            plain = AttemptOptions(iteration=1, gate=0.0, time_if_correct=False, sanitize_on_failure=False)
            verdict = None
            for e in self.toolchain.attempt(task, code, plain):
                if isinstance(e, Ran) and e.result.rc == 0 and not e.result.timed_out:
                    run_s = e.result.duration_s
                elif isinstance(e, Verdict):
                    verdict = e
            if verdict is not None:
                base = replace(
                    base, reference_category=verdict.category, reference_signature=verdict.signature
                )
        elif base.reference_checked:
            return None, None  # the reference cannot be run here: nothing to say beyond what the run shows
        return base, run_s

    def _check(self, task: Task, key: tuple[str, ...], broken: Verdict | None) -> str | None:
        if key not in self._reference:  # the session did not ask for the reference first
            self._reference[key] = self._run_reference(task, key[0])
        base, run_s = self._reference[key]
        if base is None:
            return None
        if broken is None:  # no check of the broken start to judge (a task that ships its error log)
            kind, reason = base.judge() if base.reference_category not in (None, "passed") else ("usable", "")
            return reason if kind == "unusable" else None
        checked = replace(base, broken_category=broken.category, broken_signature=broken.signature)
        kind, reason = checked.judge()
        cache = getattr(self.toolchain, "cache_root", None)
        if cache is not None:  # kept as corpus validate keeps its verdicts (not timed)
            record = record_of(checked).model_copy(update={"reference_run_s": run_s})
            verdicts.save(task, record, cache)
        return reason if kind == "unusable" else None


def _judges(toolchain: Toolchain, task: Task, code: str) -> bool:
    """Whether the toolchain can judge this candidate: a replay only what it recorded."""
    judges = getattr(toolchain, "judges", None)
    return bool(judges(task, code)) if callable(judges) else True
