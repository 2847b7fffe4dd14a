"""Minimal fixes of a corpus's tasks, searched from their references on this machine and stored per GPU.

For a task with a drop-in reference, ``search`` runs the delta debugging of ``corpus/minimal_search.py`` with
an oracle made of the project's own judge: the candidate is built, run and timed as every attempt is
(``LocalToolchain.attempt``, the stages and ``toolchain/verdict.py``), and passes when its verdict succeeds at
the gate (correct, and at least ``gate`` times the reference's speed). With a correctness screen (the same
attempt untimed) the search asks the screen and times only the set it ends with (``search``). A
**compile-only** oracle (the task's
build stage alone, no GPU) serves machines without one; what it finds passes the build, nothing more, and is
never marked verified.

Every answer is kept (``Answers``: one JSON line per candidate, under its content hash, the oracle, the
gate and the task's harness), so a search cut by its budget goes on from where it stopped when run again.
Results go to a **store** laid out as the bundled corpus keeps its fixes, one per GPU signature::

    <store>/<gpu slug>/minimal_fixes.json          {"gate", "measured", "tasks": {id: entry}}
    <store>/<gpu slug>/<task id>/minimal_fix.patch  broken start -> minimal fix (the search's edit, diff -u)
    <store>/<gpu slug>/answers/<oracle>/<task id>.jsonl

An entry has the bundled record's fields (``speedup``, ``correct``, ``gpu``, ``verified``, ``why``) and the
search's (``status``, ``found``, ``phase``, ``oracle``, ``lines``, ``reference_lines``, ``hunks``,
``reference_hunks``, ``changed_lines``, ``reference_changed_lines``, ``calls``, ``asked``, ``minimality``,
hashes, ``measured_at``). A fix is ``verified`` only when the judge oracle passed it on a GPU, it is a proper
subset of the reference's changes (it leaves out a line of code of them) and the search proved it 1-minimal:
over lines (the search ended), or over hunks when the budget cut the line phase and at least one whole hunk
of the reference was left out (``minimality`` says which). ``corpus/fixes.py`` reads verified fixes from the
stores as scoring targets of edit precision and bug recall.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from beavertui.engine.corpus import fixes, minimal_search
from beavertui.engine.corpus.harness import harness_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import append_line, parse_json, write_atomic
from beavertui.engine.session.events import Verdict
from beavertui.engine.stage import stages
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain
from beavertui.engine.toolchain.placement import GpuUse, Lease, Placement
from beavertui.engine.toolchain.verdict import run_category

OracleKind = Literal["judge", "compile"]
AnswerKind = Literal["judge", "compile", "correct"]
"""Whose answers a file keeps: the judge's (timed, at the gate), the build's, or the judge's untimed
correctness screen."""
COMPILE_GPU = "compile-only"
"""The store's folder (in place of a GPU signature) for what a compile-only oracle found."""


@dataclass(frozen=True)
class Answer:
    """One oracle answer: did this candidate pass, and what the judge said."""

    passed: bool
    category: str
    correct: bool | None
    speedup: float | None
    reason: str
    seconds: float
    """Wall seconds the oracle took."""


class JudgeOracle:
    """The task's own judge: build, run and time (``LocalToolchain.attempt``); passes when the verdict
    succeeds at ``gate``. Untimed (``timed`` False), the correctness screen: passes when the verdict is
    correct and carries no anti-cheat flag, with no timing stage. Where its stages run is the toolchain's
    placement's (``toolchain``)."""

    def __init__(self, task: Task, toolchain: LocalToolchain, gate: float, timed: bool = True) -> None:
        self.task, self.toolchain, self.gate, self.timed = task, toolchain, gate, timed

    def __call__(self, code: str) -> Answer:
        start = time.monotonic()
        options = AttemptOptions(
            iteration=1, gate=self.gate, sanitize_on_failure=False, time_if_correct=self.timed
        )
        verdict: Verdict | None = None
        for event in self.toolchain.attempt(self.task, code, options):
            if isinstance(event, Verdict):
                verdict = event
        assert verdict is not None
        passed = bool(verdict.success) if self.timed else bool(verdict.correct) and not verdict.flags
        return Answer(
            passed=passed, category=verdict.category, correct=verdict.correct,
            speedup=verdict.speedup, reason=verdict.reason[:300], seconds=round(time.monotonic() - start, 3),
        )  # fmt: skip


class CompileOracle:
    """The task's build stage alone (no GPU): passes when the candidate builds."""

    kind: OracleKind = "compile"

    def __init__(self, task: Task, config: stages.StageConfig) -> None:
        self.task, self.config = task, config

    def __call__(self, code: str) -> Answer:
        start = time.monotonic()
        with stages.workdir(self.task, code, self.config) as work:
            build = stages.build(work, self.config)
        ok = build.rc == 0 and not build.timed_out
        category = "passed" if ok else run_category(self.task, build, None).category
        why = "built" if ok else (build.log.strip().splitlines() or ["build failed"])[-1][:300]
        return Answer(ok, category, None, None, why, round(time.monotonic() - start, 3))


class SharedGpu(Placement):
    """Correctness runs of several searches share the GPU, at most ``runs`` at once; a timing (or a run
    made again alone for its memory) waits for them to end and holds the GPU alone, and no run starts while
    one waits. Builds are not placed: they run on as many threads as search."""

    def __init__(self, runs: int = 1) -> None:
        self.runs = max(1, runs)
        self._cond = threading.Condition()
        self._active = 0
        self._alone = False
        self._waiting = 0

    @contextmanager
    def gpu(self, use: GpuUse, cfg: stages.StageConfig, task: Task) -> Iterator[Lease]:
        alone = use in ("alone", "timing", "timing_memory")
        lease = Lease(cfg)
        with self._cond:
            if alone:
                self._waiting += 1
                self._cond.wait_for(lambda: self._active == 0 and not self._alone)
                self._waiting -= 1
                self._alone = True
            else:
                self._cond.wait_for(
                    lambda: not self._alone and not self._waiting and self._active < self.runs
                )
                self._active += 1
                lease.shared = self.runs > 1
        try:
            yield lease
        finally:
            with self._cond:
                if alone:
                    self._alone = False
                else:
                    self._active -= 1
                self._cond.notify_all()


def toolchain(gpu: str | None = None, runs: int = 1, config: LocalConfig | None = None) -> LocalToolchain:
    """The local toolchain the judge oracle uses: GPU stages placed by ``SharedGpu(runs)``, pinned to device
    ``gpu`` (``CUDA_VISIBLE_DEVICES``) when given; ``config``: its settings (service/environment.py
    ``local_config`` reads the user's; None: the defaults)."""
    return _Pinned(config or LocalConfig(), SharedGpu(runs), gpu)


class _Pinned(LocalToolchain):
    def __init__(self, config: LocalConfig, placement: Placement, gpu: str | None) -> None:
        super().__init__(config, placement)
        self.pinned = gpu

    def stage_config(self) -> stages.StageConfig:
        cfg = super().stage_config()
        if self.pinned is None:
            return cfg
        return replace(cfg, env={**os.environ, "CUDA_VISIBLE_DEVICES": self.pinned})


class Answers:
    """The answers kept for one task and oracle: a JSON Lines file, one line per candidate, read at start and
    appended as each answer comes (a search cut short loses nothing it asked)."""

    def __init__(self, path: Path, oracle: AnswerKind, gate: float, harness: str) -> None:
        self.path, self.oracle, self.gate, self.harness = path, oracle, gate, harness
        self.kept: dict[str, Answer] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            lines = []
        for line in lines:
            try:
                doc = json.loads(line)
                if (doc.get("oracle"), doc.get("gate"), doc.get("harness")) != (oracle, gate, harness):
                    continue
                if doc.get("category") == "infrastructure":
                    continue  # no verdict (kept by an earlier version): asked again
                self.kept[doc["hash"]] = Answer(**{k: doc[k] for k in Answer.__dataclass_fields__})
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a kill: asked again

    def get(self, code: str) -> Answer | None:
        return self.kept.get(minimal_search.text_hash(code))

    def add(self, code: str, answer: Answer) -> None:
        key = minimal_search.text_hash(code)
        self.kept[key] = answer
        doc = {
            "hash": key,
            "oracle": self.oracle,
            "gate": self.gate,
            "harness": self.harness,
            **asdict(answer),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_line(self.path, json.dumps(doc))


@dataclass(frozen=True)
class Outcome:
    """One task's search, as stored."""

    task_id: str
    status: minimal_search.Status
    found: bool
    """A minimal fix by the rule of ``verified``, whatever the oracle (a compile-only one's too)."""
    verified: bool
    why: str
    phase: str
    minimality: minimal_search.Minimality | None
    """What the fix is 1-minimal over: ``lines``, ``hunks`` (the budget cut the line phase) or None."""
    lines: int | None
    """Lines of the fix found (removed and added lines of the broken start), None when none passes."""
    reference_lines: int
    """Lines of the whole reference diff."""
    hunks: int | None
    reference_hunks: int
    changed_lines: int | None
    """The fix's changed lines as edit precision counts them (max(old, new) per opcode)."""
    reference_changed_lines: int
    calls: int
    """Fresh oracle calls of this run."""
    asked: int
    """Candidates the search asked about, kept answers included."""
    speedup: float | None
    correct: bool | None
    gpu: str | None
    oracle: OracleKind
    fix: str | None = None
    """The fixed source (not stored in the record; the patch holds it)."""
    chosen: frozenset[int] | None = None
    """The fix's units of the reference's diff (not stored in the record): the edit the patch writes."""

    def report(self) -> dict[str, object]:
        """The fields a record entry and a JSON line hold: all but the fix and its units (the patch)."""
        return {k: v for k, v in asdict(self).items() if k not in ("fix", "chosen")}


class Store:
    """One GPU signature's folder of a store (see the module's docstring)."""

    _lock = threading.Lock()

    def __init__(self, root: Path, gpu: str, gate: float) -> None:
        self.folder = root / gpu
        self.gpu, self.gate = gpu, gate

    def answers(self, task: Task, oracle: AnswerKind) -> Answers:
        return Answers(
            self.folder / "answers" / oracle / f"{task.id}.jsonl", oracle, self.gate, _harness(task)
        )

    def _read(self) -> dict[str, object]:
        try:
            doc = parse_json((self.folder / fixes.RECORD).read_text(encoding="utf-8"))
            if isinstance(doc, dict) and isinstance(doc.get("tasks"), dict):
                return doc
        except (OSError, ValueError):
            pass
        return {"gate": self.gate, "measured": "beavertui corpus minimize", "tasks": {}}

    def save(self, task: Task, outcome: Outcome, d: minimal_search.Diff | None = None) -> None:
        """The entry of ``outcome`` in the record, and its patch (written when a proper passing subset of the
        reference's changes is known, removed otherwise): the search's own edit, ``outcome.chosen`` of the
        reference's diff ``d``, so that it marks the record's ``lines``; without them a re-diff of the fix."""
        broken = task.broken_start()
        patch_path = self.folder / task.id / fixes.PATCH
        if outcome.fix is not None and outcome.lines and outcome.lines < outcome.reference_lines:
            patch_path.parent.mkdir(parents=True, exist_ok=True)
            if d is not None and outcome.chosen is not None:
                text = d.unified(outcome.chosen)
            else:
                text = minimal_search.unified(broken, outcome.fix)
            write_atomic(patch_path, text)
        elif patch_path.exists():
            patch_path.unlink()
        entry = {k: v for k, v in outcome.report().items() if k != "task_id"}
        entry["broken_hash"] = hashlib.sha256(broken.encode()).hexdigest()[:16]
        entry["harness_hash"] = _harness(task)
        entry["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        with self._lock:
            doc = self._read()
            doc["gate"] = self.gate
            tasks = doc["tasks"]
            assert isinstance(tasks, dict)
            tasks[task.id] = entry
            doc["tasks"] = dict(sorted(tasks.items()))
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(self.folder / fixes.RECORD, json.dumps(doc, indent=1) + "\n")
        fixes.clear_caches()


def _harness(task: Task) -> str:
    try:
        return harness_hash(task)
    except OSError:
        return ""


def _verdicts_only(ask: Callable[[str], Answer]) -> Callable[[str], Answer]:
    """``ask``, raising BeaverError where it gave no verdict (an infrastructure failure: the GPU, the
    toolchain), so that such an answer is never kept as the candidate's and taken again by a later run."""

    def checked(code: str) -> Answer:
        answer = ask(code)
        if answer.category == "infrastructure":
            raise BeaverError(
                f"the oracle gave no verdict (infrastructure: {answer.reason or 'no reason given'}); "
                "nothing of it kept: run again once the cause is fixed"
            )
        return answer

    return checked


def search(
    task: Task,
    oracle: Callable[[str], Answer],
    kind: OracleKind,
    store: Store,
    budget: minimal_search.Budget,
    gpu: str | None,
    hunks_only: bool = False,
    screen: Callable[[str], Answer] | None = None,
) -> Outcome:
    """Search ``task``'s minimal fix with ``oracle`` over its kept answers, store the outcome and return it
    (``hunks_only``: ask the oracle nothing past the hunk phase, going on only as far as the kept answers do).

    With a correctness ``screen`` (the judge untimed), the search asks the screen and times only what it
    ends with: a set from which no line can be left out and stay correct cannot lose one and pass the gate
    either, so when the judge passes it at the gate it is 1-minimal for the judge too. When it is correct but
    too slow, the search runs again with the judge itself, taking every incorrect answer of the screen as the
    judge's (an incorrect candidate fails at any speed)."""
    broken, reference = task.broken_start(), task.reference()
    if reference is None:
        raise ValueError(f"{task.id} ships no reference")
    oracle = _verdicts_only(oracle)
    screen = _verdicts_only(screen) if screen is not None else None
    d = minimal_search.diff(broken, reference)
    kept = store.answers(task, kind)
    screened = store.answers(task, "correct") if screen is not None else None
    unbuilt = _unbuildable(task, store) if kind == "judge" else _UnBuildable(None)

    def asker(ask_oracle: Callable[[str], Answer], into: Answers) -> Callable[[str], bool]:
        def ask(code: str) -> bool:
            answer = ask_oracle(code)
            into.add(code, answer)
            return answer.passed

        return ask

    def known(code: str) -> bool | None:
        answer = kept.get(code)
        if answer is not None:
            return answer.passed
        if screened is not None:
            first = screened.get(code)
            if first is not None and not first.passed:
                return False  # incorrect: fails the judge at any speed
        return False if unbuilt(code) else None

    def known_correct(code: str) -> bool | None:
        answer = screened.get(code) if screened is not None else None
        if answer is not None:
            return answer.passed
        return False if unbuilt(code) else None

    calls_before = budget.calls
    extra = 0  # the screen's search: the judge's timing of what it ended with
    if screen is not None and screened is not None:
        result = minimal_search.minimize(
            d,
            asker(screen, screened),
            budget,
            known=known_correct,
            hunks_only=hunks_only,
        )
        timed_why = ""
        screened_hunks = result.hunks if result.phase in ("lines", "done") else None
        if result.chosen is not None:
            code = d.apply(result.chosen)
            ask = code
            if hunks_only and kept.get(code) is None and screened_hunks is not None:
                # hunks only: the oracle is asked about the hunk phase alone, its set's timing included; a
                # set the line phase reached over kept answers is taken as timed only where that is kept too
                ask = d.apply(d.hunk_units(screened_hunks))
            if kept.get(ask) is None:
                try:
                    budget.spend()
                    kept.add(ask, oracle(ask))
                except minimal_search.BudgetExhausted as exc:
                    timed_why = f"; not timed yet: {exc}"
            timed = kept.get(code)
            extra = int(kept.get(ask) is not None)
            if timed is not None and not timed.passed and result.status != "budget":
                # correct but below the gate (or flagged): the judge's own search
                result = minimal_search.minimize(
                    d, asker(oracle, kept), budget, known=known, hunks_only=hunks_only
                )
                extra = 0
                timed_why = f"; the correct set the screen found was {_below(timed, store.gate)}: searched again at the gate"
        result, timed_why = _keep_hunk_fix(d, result, kept, timed_why, screened_hunks)
        untimed = result.chosen is not None and kept.get(d.apply(result.chosen)) is None
        if hunks_only and untimed and not timed_why:
            timed_why = (
                "; not timed at the gate yet (hunks only: the oracle times the hunk phase's set alone)"
            )
        result = replace(result, why=result.why + timed_why)
    else:
        result = minimal_search.minimize(d, asker(oracle, kept), budget, known=known, hunks_only=hunks_only)
    fix = d.apply(result.chosen) if result.chosen is not None else None
    final = kept.get(fix) if fix is not None else None
    # a target: passed, a proper subset (a line of code of the reference's diff left out: the reference less
    # its comments is no minimal fix), and either 1-minimal over lines or, cut in the line phase, without at
    # least one whole hunk of the reference
    proper = result.chosen is not None and len(result.chosen) > 0 and not d.code_units <= result.chosen
    minimal = result.minimality == "lines" or (
        result.minimality == "hunks" and len(result.hunks) < len(d.hunks)
    )
    found = proper and minimal and final is not None and final.passed
    verified = kind == "judge" and found
    why = result.why
    if unbuilt.used:
        why += f"; {unbuilt.used} candidates failed by their kept compile-only build, not asked on the GPU"
    if result.status == "budget":
        if budget.max_calls == 0:  # a replay: it cannot go on by itself
            why += "; a search with the oracle goes on from here (the answers so far are kept)"
        else:
            why += "; run again to go on (the answers so far are kept)"
        if found:
            why = f"1-minimal over hunks, not yet over lines: {why}"
        elif proper and final is not None and final.passed:
            why = f"no hunk of the reference could be left out, the line phase is not done: {why}"
    if found and kind == "compile":
        why = f"builds (compile-only oracle, no GPU; not verified): {why}"
    elif verified:
        why = f"correct and at least {store.gate:g}x the reference's speed: {why}"
    outcome = Outcome(
        task_id=task.id, status=result.status, found=found, verified=verified, why=why, phase=result.phase,
        minimality=result.minimality,
        lines=len(result.chosen) if result.chosen is not None else None, reference_lines=len(d.units),
        hunks=len({d.units[u].hunk for u in result.chosen}) if result.chosen is not None else None,
        reference_hunks=len(d.hunks),
        changed_lines=minimal_search.changed_lines(broken, fix) if fix is not None else None,
        reference_changed_lines=minimal_search.changed_lines(broken, reference),
        calls=budget.calls - calls_before, asked=result.asked + extra,
        speedup=final.speedup if final else None, correct=final.correct if final else None,
        gpu=gpu if kind == "judge" else None, oracle=kind, fix=fix, chosen=result.chosen,
    )  # fmt: skip
    store.save(task, outcome, d)
    return outcome


def _keep_hunk_fix(
    d: minimal_search.Diff,
    result: minimal_search.Result,
    kept: Answers,
    why: str,
    hunks: frozenset[int] | None,
) -> tuple[minimal_search.Result, str]:
    """A screened search the budget cut holds the smallest correct set so far, not timed at the gate (cut
    in its line phase), or nothing (the judge's own search, after the screen's set fell below the gate, cut
    before it began); one that ended holds its set untimed when the budget (or ``hunks_only``) allowed no
    timing. Where the screen's hunk phase had ended (``hunks``: the hunks it kept) and the judge timed that
    set and passed it at the gate, that set is the fix kept, 1-minimal over hunks (leaving out a hunk makes
    it incorrect, so it fails the judge too), and the search is ``budget`` (cut before its timing): neither
    a cut nor a search over kept answers takes back a fix already verified. The search goes on next time."""
    chosen = kept.get(d.apply(result.chosen)) if result.chosen is not None else None
    ended = result.status == "minimal" and chosen is None
    if not (result.status == "budget" or ended) or hunks is None:
        return result, why
    at_hunks = d.hunk_units(hunks)
    hunk_fix = kept.get(d.apply(at_hunks))
    if at_hunks == result.chosen or (chosen is not None and chosen.passed):
        return result, why
    if hunk_fix is None or not hunk_fix.passed:
        return result, why
    if ended:
        why += "; the fix kept is the hunk phase's, timed at the gate"
        ended_why = f"the line phase ended with a set not timed at the gate yet ({result.why})"
        return replace(
            result, status="budget", phase="lines", chosen=at_hunks, minimality="hunks", hunks=hunks,
            why=ended_why,
        ), why  # fmt: skip
    if result.chosen is not None:
        why += (
            f"; the smallest correct set so far ({len(result.chosen)} of {len(at_hunks)} lines) is not "
            "timed at the gate yet: the fix kept is the hunk phase's, timed at the gate"
        )
    else:
        why += "; the fix kept is the hunk phase's, timed at the gate"
    return replace(result, chosen=at_hunks, minimality="hunks", hunks=hunks), why


BUILD_FAILURES = frozenset({"buildability", "integration"})
"""The categories of a build that failed on the candidate's account (a compile or a link error): not a
time limit, nor a header or library the machine lacks."""


class _UnBuildable:
    """Whether a candidate is known not to build from a compile-only search's kept answers (``corpus
    minimize --oracle compile``, on any machine with the same compiler), so that the judge fails it without
    the GPU: a candidate that does not build fails every oracle. Trusted only where that search built the
    task's reference (its machine builds the task as the judge's does), and only for compile and link
    errors. ``used`` counts the candidates it answered."""

    def __init__(self, built: Answers | None) -> None:
        self.built = built
        self._answered: set[str] = set()
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return len(self._answered)

    def __call__(self, code: str) -> bool:
        answer = self.built.get(code) if self.built is not None else None
        if answer is None or answer.passed or answer.category not in BUILD_FAILURES:
            return False
        with self._lock:
            self._answered.add(minimal_search.text_hash(code))
        return True


def _unbuildable(task: Task, store: Store) -> _UnBuildable:
    built = Store(store.folder.parent, COMPILE_GPU, store.gate).answers(task, "compile")
    reference = task.reference()
    answer = built.get(reference) if reference is not None else None
    return _UnBuildable(built if answer is not None and answer.passed else None)


def _below(answer: Answer, gate: float) -> str:
    if answer.correct and answer.speedup is not None:
        return f"{answer.speedup:.3f}x the reference's speed, below {gate:g}x"
    return f"not passed by the judge ({answer.category}: {answer.reason[:120]})"
