"""In-process timing of native tasks: reference and candidate interleaved in one process and one CUDA context.

With ``TimingConfig.inprocess``, a task whose input.json has ``timing_driver`` (the bundled corpus) is timed
without one process per side and round. The timing sources (corpus/_timing: one file per family and
beaver_timing.cuh) are copied into the work dir before each timing build; they include the family harness
and the task's test_main.cu unchanged, so the correctness harness, and every hash keyed on it, stays as it
is. Each solution is built a second time as a side library (``library_command``: a shared object whose only
export hands out the task's entry point); the task's timing driver (``driver_command``, built once per task,
harness, toolkit and timing sources beside the cached reference build) loads the reference's and the
candidate's libraries with ``dlopen(RTLD_LOCAL)`` and runs corpus/_timing/beaver_timing.cuh's protocol: the problem is
made once (spmv's matrix drawn on the device), each side is checked at the timing size, then rounds of
(reference, candidate) time 20 launches each with fresh inputs, a poisoned output, the L2 flushed and CUDA
events, each round ending with the check of that side's last timed launch. CUDA start-up is paid once per
timing stage instead of six times.

Why one process with two libraries rather than two processes: the two sides then share the context, the
clocks and the thermal state of one moment, the inputs are drawn once, and the cost of a stage is its
launches. Why dlopen rather than linking both into one binary: the two solutions define the same symbols (the
entry point and often the same kernel names); RTLD_LOCAL keeps each library bound to its own definitions.

What a shared address space changes for anti-cheat, and how it is covered: every output line belongs to the
section (``BEAVER_SIDE``) it appears in, and a failure to the side whose section was open, so the flags of
the process contract keep their meaning per side (``cached_result`` for a candidate that fails after its
samples, ``timing_run_failed`` before them, poison lines, ``side_stream`` from the host times). A section
with more timed lines than the driver writes means output the harness did not write (``timing_run_failed``).
Host threads are counted after every section: a candidate whose library starts threads, or whose timed
rounds leave more running, is flagged ``side_stream`` (such a thread could slow the other side down).

Anything that keeps a task from this path (the candidate does not build as a library, the driver does not
build or cannot load a library, the timing process fails outside the candidate's sections) raises
NativeUnavailable: the caller then times through the process contract (``benchmark_command``) and says so in
the result's note. This module never classifies.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from beavertui.engine.corpus.harness import hash_tree
from beavertui.engine.corpus.task import Task, TimingDriver
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import remove_tree, write_atomic
from beavertui.engine.judge import anticheat
from beavertui.engine.session.events import Flag, StageResult, TimingResult
from beavertui.engine.stage import stages
from beavertui.engine.timing.samples import timing_result


@dataclass(frozen=True)
class Rules:
    """What this path shares with the process contract, handed in by inprocess.py."""

    parse_times: Callable[[str], list[float]]
    stats: Callable[[list[float]], tuple[float, float]]
    cv_limit: float
    implausible: float
    candidate_failed: Callable[[StageResult, str], BeaverError]


class TimerLike(Protocol):
    """The parts of runs.TimedRuns this module uses."""

    task: Task
    config: stages.StageConfig
    tcfg: Any
    runs: list[tuple[str, StageResult]]


#: TimingResult.method of this path.
METHOD = "native_inprocess"

SIDE_RE = re.compile(r"^BEAVER_SIDE\s+(reference|candidate)\s+(load|check|round)(?:\s+(\d+))?\s*$", re.M)
THREADS_RE = re.compile(r"^BEAVER_THREADS\s+(-?\d+)\s*$", re.M)
DRIVER_RE = re.compile(r"^BEAVER_DRIVER\s+sides\s+(\d+)\s+rounds\s+(\d+)\s+iters\s+(\d+)\b", re.M)
DONE_RE = re.compile(r"^BEAVER_DONE\s+rounds\s+(\d+)\s+iters\s+(\d+)\s*$", re.M)
STOPPED_RE = re.compile(r"^BEAVER_STOPPED\b.*$", re.M)
CAPPED_RE = re.compile(r"^BEAVER_CAPPED\s+(\d+)\s+of\s+(\d+)\s+launches\b.*$", re.M)

#: ``--min-iters``: the fewest timed launches of a round before the side budget (TimingConfig.side_budget_ms,
#: ``--side-budget-ms``) may end it; its warm-ups stop after the first once they took a quarter of it. A
#: broken start of 471 ms a launch took 12.3 s a timing stage without it (docs/lab/h200-2026-12-03.md).
MIN_ITERS = 5
LOAD_FAILED_RE = re.compile(r"^BEAVER_LOAD_FAILED\s+(reference|candidate):\s*(.*)$", re.M)

BUILT = ".beaver-timing-built"
FAILED = ".beaver-timing-failed"


class NativeUnavailable(BeaverError):
    """This attempt cannot be timed in one process (the caller falls back to the process contract)."""


@dataclass(frozen=True)
class Section:
    """One ``BEAVER_SIDE`` section of a driver log: the lines after its marker up to the next one."""

    side: str
    """``reference``, ``candidate``, or ``driver`` for what precedes the first marker."""
    phase: str
    """``load``, ``check``, ``round`` (``driver``: ``start``)."""
    round: int | None
    text: str

    @property
    def threads(self) -> int | None:
        found = [int(m.group(1)) for m in THREADS_RE.finditer(self.text)]
        return found[-1] if found and found[-1] >= 0 else None


def sections(log: str) -> list[Section]:
    """The log cut at every ``BEAVER_SIDE`` marker."""
    out: list[Section] = []
    marks = list(SIDE_RE.finditer(log))
    out.append(Section("driver", "start", None, log[: marks[0].start()] if marks else log))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(log)
        out.append(
            Section(m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None, log[m.end() : end])
        )
    return out


@dataclass
class DriverRun:
    """One run of the timing driver, read."""

    result: StageResult
    parse_times: Callable[[str], list[float]]
    parts: list[Section]
    iters: int | None
    """Timed launches per side and round, as the driver announced them."""
    done: bool
    stopped: bool

    @classmethod
    def read(cls, result: StageResult, parse_times: Callable[[str], list[float]]) -> DriverRun:
        head = DRIVER_RE.search(result.log)
        done = DONE_RE.search(result.log)
        return cls(
            result,
            parse_times,
            sections(result.log),
            int(head.group(3)) if head else None,
            done is not None and result.rc == 0 and not result.timed_out,
            STOPPED_RE.search(result.log) is not None,
        )

    def text(self, side: str, phases: tuple[str, ...] = ("load", "check", "round")) -> str:
        return "".join(s.text for s in self.parts if s.side == side and s.phase in phases)

    def samples(self, side: str) -> list[float]:
        return self.parse_times(self.text(side, ("round",)))

    def capped(self, side: str) -> list[tuple[int, int]]:
        """(timed, asked) for each of ``side``'s rounds that stopped at the side budget."""
        return [
            (int(m.group(1)), int(m.group(2)))
            for s in self.parts
            if s.side == side and s.phase == "round"
            for m in CAPPED_RE.finditer(s.text)
        ]

    def capped_note(self, budget_ms: float) -> str | None:
        """What the side budget cut, in words, or None."""
        parts = []
        for side in ("reference", "candidate"):
            cut = self.capped(side)
            if cut:
                timed = "/".join(str(t) for t, _ in cut)
                parts.append(
                    f"the {side}'s launches took over {budget_ms / 1000:g} s a round: "
                    f"{timed} of {cut[0][1]} timed in {len(cut)} round{'s' if len(cut) > 1 else ''}"
                )
        return "; ".join(parts) or None

    def culprit(self) -> str | None:
        """The side whose section was open when the driver stopped (None: before either was loaded)."""
        last = self.parts[-1]
        return None if last.side == "driver" else last.side

    def forged(self) -> str | None:
        """Why the timed lines are not all the driver's own (more in a section than it writes), or None."""
        for s in self.parts:
            n = len(self.parse_times(s.text))
            if s.phase != "round" and n:
                return f"{n} timed lines in the {s.side}'s {s.phase} section, where the harness writes none"
            if s.phase == "round" and self.iters is not None and n > self.iters:
                return f"{n} timed lines in the {s.side}'s round {s.round}, the harness writes {self.iters}"
        return None

    def thread_flag(self) -> Flag | None:
        """``side_stream`` evidence when the candidate leaves host threads running: a candidate section ends
        with more threads than the section before it, by more than any reference section of the same phase
        grew (the reference's own growth stands for what the CUDA runtime starts by itself)."""
        growth: list[tuple[Section, int, int]] = []
        prev: int | None = None
        for s in self.parts:
            n = s.threads
            if n is None:
                continue
            if prev is not None:
                growth.append((s, prev, n))
            prev = n
        ref_growth = {
            phase: max([n - p for s, p, n in growth if s.side == "reference" and s.phase == phase] or [0])
            for phase in ("load", "check", "round")
        }
        for s, p, n in growth:
            if s.side == "candidate" and n - p > ref_growth[s.phase]:
                where = {
                    "load": "when its library was loaded",
                    "check": "in its first call",
                    "round": f"in timed round {s.round}",
                }[s.phase]
                return Flag(
                    name="side_stream",
                    detail=f"the candidate started host threads {where} ({p} -> {n} in the timing process)",
                )
        return None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _tail(log: str) -> str:
    return ([ln for ln in log.splitlines() if ln.strip()][-1:] or ["no output"])[0][:200]


def timing_key(d: TimingDriver) -> str:
    """What the timing builds of a work dir depend on besides the reference build's own key (reference,
    harness, toolkit): both commands and the timing sources (``folders``), one sha256."""
    h = hashlib.sha256(f"{d.library_command}\n{d.driver_command}\n".encode())
    for src, dest in d.folders:
        for rel, digest in sorted(hash_tree(src, set()).items()):
            h.update(f"{dest}/{rel}:{digest}\n".encode())
    return h.hexdigest()


def place_sources(d: TimingDriver, work: stages.WorkDir) -> None:
    """Copy the timing sources into ``work`` (a fresh copy: a candidate cannot have left its own there)."""
    for src, dest in d.folders:
        target = work.path / dest
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            remove_tree(target)  # the candidate has run here: any tree it left, however deep
        shutil.copytree(src, target, symlinks=False)


def reference_side(task: Task, ref: stages.WorkDir, config: stages.StageConfig) -> stages.WorkDir:
    """The cached reference build ``ref`` (reference.reference_workdir) with its side library and the task's
    timing driver built beside it (once per timing key; a failure is remembered, so every later attempt falls
    back at once instead of building again, until the timing sources or commands change)."""
    d = task.timing_driver
    if d is None:
        raise NativeUnavailable(f"{task.id}: no timing driver")
    if d.unavailable:
        raise NativeUnavailable(d.unavailable)
    key = timing_key(d)

    def marked(name: str) -> str | None:
        p = ref.path / name
        if not p.is_file():
            return None
        first, _, rest = p.read_text(errors="replace").partition("\n")
        return rest.strip() if first.strip() == key else None

    if marked(BUILT) is not None:
        return ref
    if (why := marked(FAILED)) is not None:
        raise NativeUnavailable(why)
    with _locked(ref.path / ".beaver-timing.lock"):
        if marked(BUILT) is not None:
            return ref
        place_sources(d, ref)
        for what, command in (("side library", d.library_command), ("timing driver", d.driver_command)):
            res = stages.run_stage(ref, "build", command, task.timeouts.build_s, config)
            if res.rc != 0 or res.timed_out:
                why = f"the reference's {what} does not build here ({_tail(res.log)})"
                write_atomic(ref.path / FAILED, f"{key}\n{why}\n")
                raise NativeUnavailable(why)
        (ref.path / FAILED).unlink(missing_ok=True)
        write_atomic(ref.path / BUILT, f"{key}\n{d.library_command}\n{d.driver_command}\n")
    return ref


def build_library(task: Task, work: stages.WorkDir, config: stages.StageConfig) -> StageResult:
    """The candidate built as a side library in its own work dir, with a fresh copy of the timing sources
    (whatever was there by the library's name first goes)."""
    d = task.timing_driver
    if d is None:
        raise NativeUnavailable(f"{task.id}: no timing driver")
    if d.unavailable:
        raise NativeUnavailable(d.unavailable)
    (work.path / d.library).unlink(missing_ok=True)
    place_sources(d, work)
    return stages.run_stage(work, "build", d.library_command, task.timeouts.build_s, config)


def driver_command(
    task: Task,
    ref: stages.WorkDir,
    cand: stages.WorkDir | None,
    rounds: int,
    stop_below: float | None,
    cv_limit: float = 0.03,
    side_budget_ms: float = 0.0,
) -> str:
    d = task.timing_driver
    assert d is not None
    parts = [shlex.quote(str(ref.path / d.driver)), d.driver_args]
    parts += ["--reference", shlex.quote(str(ref.path / d.library))]
    if cand is not None:
        parts += ["--candidate", shlex.quote(str(cand.path / d.library))]
    parts += ["--rounds", str(max(1, rounds))]
    if side_budget_ms > 0:
        parts += ["--side-budget-ms", f"{side_budget_ms:g}", "--min-iters", str(MIN_ITERS)]
    if stop_below is not None and cand is not None:
        parts += ["--stop-below", f"{stop_below:.6g}", "--cv-limit", f"{cv_limit:g}"]
    return " ".join(p for p in parts if p)


def run_driver(
    timer: TimerLike,
    rules: Rules,
    ref: stages.WorkDir,
    cand: stages.WorkDir | None,
    rounds: int,
    stop_below: float | None,
) -> DriverRun:
    """One timing process, run in the candidate's work dir (the reference's own when there is none)."""
    cmd = driver_command(timer.task, ref, cand, rounds, stop_below, rules.cv_limit, timer.tcfg.side_budget_ms)
    res = stages.run_stage(cand or ref, "benchmark", cmd, timer.tcfg.stage_s, timer.config)
    timer.runs.append(("driver", res))
    return DriverRun.read(res, rules.parse_times)


def _samples(
    run: DriverRun, with_candidate: bool, rules: Rules
) -> tuple[list[float], list[float], list[Flag]]:
    """(reference samples, candidate samples, flags) of a driver run, or the failure it stands for."""
    res = run.result
    loaded = LOAD_FAILED_RE.search(res.log)
    if loaded is not None:
        raise NativeUnavailable(
            f"the {loaded.group(1)}'s side library does not load: {loaded.group(2)[:200]}"
        )
    forged = run.forged()
    if forged is not None and with_candidate:
        raise rules.candidate_failed(res, f"timing output not written by the harness: {forged}")
    r, c = run.samples("reference"), run.samples("candidate")
    flags: list[Flag] = []
    if not run.done:
        who = run.culprit()
        if not res.timed_out and who != "candidate":  # the reference or the driver: not the candidate's doing
            raise NativeUnavailable(
                f"the timing process stopped in the {who or 'driver'}'s section (rc {res.rc}): {_tail(res.log)}"
            )
        if res.timed_out or not with_candidate:
            raise BeaverError(
                f"in-process timing stopped in the {who or 'driver'}'s section (rc {res.rc}"
                f"{', timed out' if res.timed_out else ''}): {_tail(res.log)}"
            )
        text = run.text("candidate")
        if not c:  # before any timed launch: right at the correctness size only, or a fault at this size
            raise rules.candidate_failed(res, anticheat.failure_evidence(text, res.rc))
        hit = anticheat.cached_result_flag(res.rc, text, res.timed_out)
        flags += [hit] if hit else []
    if not r or (with_candidate and not c):
        raise BeaverError(f"in-process timing produced no samples (rc {res.rc}): {_tail(res.log)}")
    return r, c, flags


def measure(
    timer: TimerLike,
    rules: Rules,
    ref: stages.WorkDir,
    cand: stages.WorkDir,
    gate: float | None = None,
    library: StageResult | None = None,
) -> TimingResult:
    """The candidate against the reference in one timing process (a second one only when a CV is above 3%).

    ``library``: the candidate's side library when the caller built it already (the batch builds it on a
    build slot before it holds the GPU alone); otherwise it is built here. ``ref``: the cached reference
    build (reference.reference_workdir)."""
    stats, cv_limit = rules.stats, rules.cv_limit
    task, tcfg = timer.task, timer.tcfg
    ref = reference_side(task, ref, timer.config)
    lib = library if library is not None else build_library(task, cand, timer.config)
    if lib.rc != 0 or lib.timed_out:
        raise NativeUnavailable(f"the candidate does not build as a side library ({_tail(lib.log)})")
    timer.runs = []
    stop_below = gate / 2 if gate else None
    run = run_driver(timer, rules, ref, cand, tcfg.rounds, stop_below)
    r, c, flags = _samples(run, True, rules)
    (rm, rcv), (cm, ccv) = stats(r), stats(c)
    note: str | None = None
    again = max(rcv, ccv) > cv_limit and not flags
    if run.stopped and cm > 0:
        note = (
            f"stopped after 1 of {tcfg.rounds} rounds: {rm / cm:.3g}x, below {stop_below:.3g}x "
            "(half the gate), with both CVs under 3%"
        )
    if again:
        run = run_driver(timer, rules, ref, cand, tcfg.rounds, None)
        r, c, flags = _samples(run, True, rules)
        (rm, rcv), (cm, ccv) = stats(r), stats(c)
        note = "re-measured once: CV above 3%"
    capped = run.capped_note(tcfg.side_budget_ms)
    if capped:
        note = f"{note}; {capped}" if note else capped
    cand_pairs = anticheat.timed_pairs(run.text("candidate", ("round",)))
    ref_pairs = anticheat.timed_pairs(run.text("reference", ("round",)))
    flags += anticheat.poison_flags(run.text("candidate"), " in a timing run", run.text("reference"))
    side = anticheat.side_stream_of_pairs(cand_pairs, ref_pairs)
    flags += [side] if side else []
    threads = run.thread_flag()
    flags += [threads] if threads else []
    kept = anticheat.first_of_each_kind(flags)
    return timing_result(
        METHOD,
        r,
        c,
        note=note,
        flags=kept,
        candidate_host=[h for _, h in cand_pairs],
        reference_host=[h for _, h in ref_pairs],
        remeasured=again,
    )


def time_reference(timer: TimerLike, rules: Rules, ref: stages.WorkDir) -> tuple[list[float], str | None]:
    """The reference alone in one timing process (baselines): its samples, re-measured once above 3% CV."""
    ref = reference_side(timer.task, ref, timer.config)
    timer.runs = []
    samples, _, _ = _samples(run_driver(timer, rules, ref, None, timer.tcfg.rounds, None), False, rules)
    if rules.stats(samples)[1] > rules.cv_limit:
        samples, _, _ = _samples(run_driver(timer, rules, ref, None, timer.tcfg.rounds, None), False, rules)
        return samples, "re-measured once: CV above 3%"
    return samples, None
