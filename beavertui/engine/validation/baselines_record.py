"""`corpus baselines`: record every task's named baselines on this GPU, and the table of them.

Tasks with the same PyTorch equivalent (the same module, arguments and style: reduce_00 to reduce_03, the
release instances of one kernelbench problem) are timed once and the set stored for each of them. A driver
process (timing/baselines_driver.py) per equivalent; up to ``jobs`` of them are started at once.

Admission by memory. A driver holds its inputs, its models and every variant's output on the GPU from its
warm-up until it is timed, so drivers warming up side by side share the GPU's memory: a kernelbench problem's
inputs reach 8 to 17 GB, and twelve such drivers started together ran out of memory on an 80 GB H100. So each
driver first sizes, before it touches the GPU, what it will hold: its inputs drawn on torch's ``meta``
device (kernelbench_driver.py's ``meta_bytes``; drawn on the host and measured where the meta device cannot
draw them), and its model's output and weights built and called there. It prints them and waits. Its need is
estimated as ``DRIVER_BASE_BYTES`` (CUDA context, flush buffer, workspaces) plus, per variant, ``PER_VARIANT``
copies of the inputs and of the output (the output each variant keeps, the memory pools of CUDA Graph and
reduce-overhead, which also copy the inputs, the allocator's cached intermediates) and one of the weights. That
bounds what drivers were seen to hold on an H100 (nvidia-smi, per process): 9.2 GiB for the bundled transpose
of 0.5 GiB in and out (estimated 9.5 GiB), up to 5.0 GiB for the bundled softmaxes of 0.25 GiB in and out
(estimated 5.5 GiB), at least 36.6 GiB for kernelbench's level 1 max-pool of 3 GiB in and out (30.6 GiB held
when 6 GiB more failed; estimated 49.5 GiB).

Drivers are admitted to the GPU in rounds: the first one waiting, then every other whose estimate still fits
beside those in ``HEADROOM`` of the GPU's total memory (nvidia-smi's ``memory.total``, given as
``gpu_memory_bytes``; without it every driver started is admitted). The admitted drivers build and warm up
their variants side by side (torch.compile's compilation is the long part, on the CPU), each prints its ready
line and waits; then each is given its go in turn and timed alone, the others idle; then the next round. Each
driver's result carries its measured peak (``torch.cuda.max_memory_reserved``), printed beside its estimate.

A driver whose estimate alone exceeds that room runs by itself, and cannot hold its variants together
either: on an H100, a kernelbench problem of 7 GiB in and out (estimated 113.5 GiB) held 63 GiB with eager,
compile and their outputs when reduce-overhead ran out of memory. Its admit file carries its estimate and
the room (``{"need_bytes": N, "room_bytes": R}``), and the driver then takes its variants one at a time,
each built, warmed up, timed (its trials in a row) and released before the next (baselines_driver.py), so
its peak is about one variant's; after its go it has ``warm_s`` per variant to end. Its set records why
(``one_at_a_time``), and so does its outcome's note.

Estimating ahead was chosen over admitting by measured peaks: a peak is known only once a driver has warmed
up, after it could already have crowded out the others.

A driver of which some variant (or the drawing of its inputs) still ran out of GPU memory beside others is
started again next, before any new driver, and admitted by itself; its set replaces the first, and its
outcome says it was timed alone after running out of memory beside others (or, the time budget spent first,
that it was not). Whatever cannot be timed says why in one line (torch missing, no equivalent declared, a
variant torch.compile refuses).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beavertui.engine.corpus.harness import harness_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import write_atomic
from beavertui.engine.host import ceilings as ceilings_mod
from beavertui.engine.host import reaper
from beavertui.engine.session.events import GpuSignature
from beavertui.engine.timing import baselines, named_baselines
from beavertui.engine.timing.named_baselines import BaselineSet, Equivalent

#: The driver script, run with this interpreter.
DRIVER = Path(named_baselines.__file__).with_name("baselines_driver.py")
DRIVER_TAG = "BEAVER_BASELINES "
DRIVER_READY = "BEAVER_BASELINES_READY"
DRIVER_SIZED = "BEAVER_BASELINES_SIZED"
#: The longest a driver waits for its admission, then for its go, seconds: the rounds before its own can take
#: long, and a driver never outlives this process (its death signal, and every driver is ended at the end).
GO_TIMEOUT_S = 24 * 3600.0

#: A driver's GPU memory beside its inputs, outputs and weights, bytes: the CUDA context (about 0.5 GiB), the
#: L2 flush buffer (256 MiB or twice the L2), cuBLAS and cuDNN workspaces.
DRIVER_BASE_BYTES = 3 << 29
#: Copies of the inputs and of the output a driver is taken to hold per variant: the output each variant
#: keeps (eager's a clone, the compiled and captured ones their own, CUDA Graph's and reduce-overhead's in
#: their memory pools, which also copy the inputs) and the allocator's cached intermediates.
PER_VARIANT = 2
#: The share of the GPU's total memory that the admitted drivers' estimates may fill together.
HEADROOM = 0.9


@dataclass
class Job:
    """One equivalent to time, and every task that shares it."""

    eq: Equivalent
    tasks: list[Task]
    variants: tuple[str, ...]


@dataclass
class Outcome:
    """What recording did for one task."""

    task_id: str
    stored: Path | None = None
    found: BaselineSet | None = None
    reason: str | None = None
    """Why nothing was stored (one line)."""
    shared_with: str | None = None
    """The task the driver ran for, when another."""
    note: str | None = None
    """What else happened (one line): timed alone after running out of GPU memory beside other drivers, or
    not, for want of time; its variants timed one at a time, and why."""


@dataclass
class Plan:
    jobs: list[Job] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Task id -> why it has no PyTorch baselines."""


def plan(tasks: Iterable[Task]) -> Plan:
    """The jobs for ``tasks``: one per distinct equivalent, in the order first met."""
    out = Plan()
    by_key: dict[str, Job] = {}
    for t in tasks:
        try:
            eq = named_baselines.equivalent(t)
        except BeaverError as exc:
            out.skipped[t.id] = str(exc)
            continue
        if eq is None:
            out.skipped[t.id] = named_baselines.why_none(t)
            continue
        key = eq.share_key()
        if key in by_key:
            by_key[key].tasks.append(t)
            continue
        variants = (*named_baselines.TORCH_NAMES, *(("vendor",) if eq.vendor else ()))
        job = by_key[key] = Job(eq, [t], variants)
        out.jobs.append(job)
    return out


def driver_command(
    job: Job, trials: int, warmup: int, go: Path | None, python: str = sys.executable,
    admit: Path | None = None,
) -> list[str]:  # fmt: skip
    cmd = [
        python, str(DRIVER), "--module", str(job.eq.module), "--args", json.dumps(dict(job.eq.args)),
        "--style", job.eq.style, "--trials", str(trials), "--warmup", str(warmup),
        "--variants", ",".join(job.variants),
    ]  # fmt: skip
    if admit is not None:
        cmd += ["--admit-file", str(admit)]
    if go is not None:
        cmd += ["--go-file", str(go)]
    if admit is not None or go is not None:
        cmd += ["--go-timeout", f"{GO_TIMEOUT_S:g}"]
    return cmd


def parse_driver(log: str) -> dict[str, Any] | None:
    """The driver's result object from its output (the last result line), or None."""
    doc = None
    for line in log.splitlines():
        if line.startswith(DRIVER_TAG):
            try:
                got = json.loads(line[len(DRIVER_TAG) :])
            except ValueError:
                continue
            if isinstance(got, dict):
                doc = got
    return doc


def _env(job: Job) -> dict[str, str]:
    env = dict(os.environ)
    extra = [str(p) for t in job.tasks[:1] for p in t.pythonpath]
    if extra:
        env["PYTHONPATH"] = os.pathsep.join([*extra, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@dataclass
class _Started:
    job: Job
    proc: subprocess.Popen[bytes]
    out: Path
    admit: Path
    go: Path
    began: float
    alone: bool = False
    """A second run, by itself, of a driver that ran out of GPU memory beside others."""
    need: int | None = None
    """Its estimated GPU memory, bytes (None: not known)."""
    beside: int = 0
    """How many other drivers were admitted with it."""
    late: float | None = None
    """Set when it was stopped for not being ready within this many seconds."""
    one_at_a_time: bool = False
    """Told to take its variants one at a time (its estimate exceeds the room)."""
    overran: float | None = None
    """Set when it was stopped for not ending within this many seconds of its go."""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """End a driver and whatever it started (torch.compile's worker processes): its own process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _log_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _tail(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(DRIVER_TAG)]
    return lines[-1][:200] if lines else "no output"


def need_bytes(sized: Mapping[str, Any], variants: int) -> int | None:
    """The GPU memory a driver is taken to need, bytes, from its ``BEAVER_BASELINES_SIZED`` object: the
    fixed part, and for each variant PER_VARIANT copies of the inputs and the output (the output's size taken
    as the inputs' where the meta device could not tell) and one of the weights. None without the inputs'
    size."""
    inputs = sized.get("input_bytes")
    if not isinstance(inputs, int) or isinstance(inputs, bool) or inputs < 0:
        return None
    out = sized.get("output_bytes")
    out = out if isinstance(out, int) and not isinstance(out, bool) and out >= 0 else inputs
    weights = sized.get("weight_bytes")
    weights = weights if isinstance(weights, int) and not isinstance(weights, bool) and weights >= 0 else 0
    return DRIVER_BASE_BYTES + variants * (PER_VARIANT * (inputs + out) + weights)


def _sized(text: str) -> dict[str, Any] | None:
    for line in text.splitlines():
        if line.startswith(DRIVER_SIZED + " "):
            try:
                got = json.loads(line[len(DRIVER_SIZED) + 1 :])
            except ValueError:
                return {}
            return got if isinstance(got, dict) else {}
    return None


def _others(n: int) -> str:
    return f"{n} other driver" + ("s" if n != 1 else "")


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _admit(waiting: list[_Started], room: int | None) -> list[_Started]:
    """The drivers of ``waiting`` to warm up side by side next: a retry alone, by itself; else the first one
    waiting, then every other whose estimate fits beside those in ``room`` bytes (all of them where the GPU's
    memory is not known). A driver whose estimate alone exceeds ``room`` goes by itself; one of unknown need
    is taken to need the whole room."""
    for s in waiting:
        if s.alone:
            return [s]
    if room is None:
        return list(waiting)
    group: list[_Started] = []
    used = 0
    for s in waiting:
        need = s.need if s.need is not None else room
        if not group:
            group.append(s)
            used = need
            if need >= room:
                break
        elif used + need <= room:
            group.append(s)
            used += need
    return group


def record(
    tasks: Sequence[Task], gpu: GpuSignature, *, jobs: int = 4, trials: int = 20, warmup: int = 3,
    budget_s: float | None = None, warm_s: float = 600.0, python: str = sys.executable,
    cache: Path | None = None, progress: Callable[[str], None] | None = None,
    measured: ceilings_mod.Ceilings | None = None, on_stored: Callable[[BaselineSet], None] | None = None,
    gpu_memory_bytes: int | None = None,
) -> list[Outcome]:  # fmt: skip
    """Time and store the named baselines of ``tasks`` on ``gpu`` (see the module's docstring). Up to
    ``jobs`` drivers are started; those admitted by ``gpu_memory_bytes`` (the GPU's total memory; None: all
    admitted) warm up side by side. Stops starting drivers once ``budget_s`` seconds have passed; the tasks
    not reached say so. ``on_stored`` is given each set as soon as it is stored (a run cut short keeps what it
    stored)."""
    say = progress or (lambda _s: None)
    p = plan(tasks)
    outcomes = [Outcome(tid, reason=why) for tid, why in p.skipped.items()]
    t0 = time.monotonic()
    room = int(gpu_memory_bytes * HEADROOM) if gpu_memory_bytes else None
    queue: list[tuple[Job, bool]] = [(job, False) for job in p.jobs]
    """Jobs not started yet, and whether each is a retry alone (those go first)."""
    waiting: list[_Started] = []
    """Drivers started and sized (or sizing), not admitted to the GPU yet."""
    first_run: dict[int, int] = {}
    """id(job) -> how many other drivers it ran out of memory beside, for the jobs being retried alone."""
    with tempfile.TemporaryDirectory(prefix="beaver-baselines-") as tmp:
        n = 0
        group: list[_Started] = []
        try:
            while queue or waiting:
                if budget_s is not None and (elapsed := time.monotonic() - t0) > budget_s:
                    for s in waiting:
                        _kill(s.proc)
                    why = (
                        f"not reached within the time budget (no driver is started after {budget_s:g} s; "
                        f"stopped at {elapsed:.0f} s)"
                    )
                    unreached = [s.job for s in waiting if not s.alone] + [j for j, a in queue if not a]
                    for job in unreached:
                        outcomes += [Outcome(t.id, reason=why) for t in job.tasks]
                    kept = sum(1 for o in outcomes if o.stored is not None)
                    say(
                        f"time budget of {budget_s:g} s spent at {elapsed:.0f} s: "
                        f"{sum(len(j.tasks) for j in unreached)} task(s) not reached; the {kept} set(s) stored "
                        "before are kept"
                    )
                    for job in [s.job for s in waiting if s.alone] + [j for j, a in queue if a]:
                        note = (
                            f"ran out of GPU memory beside {_others(first_run[id(job)])}; not timed again alone "
                            "within the time budget"
                        )
                        say(f"{job.tasks[0].id}: {note}")
                        for o in outcomes:
                            if o.task_id in {t.id for t in job.tasks}:
                                o.note = note
                    waiting = []
                    break
                while queue and len(waiting) < max(1, jobs):
                    job, alone = queue.pop(0)
                    n += 1
                    waiting.append(_start(job, alone, Path(tmp), n, trials, warmup, python))
                # every driver started sized (or ended, or stopped) before any is admitted
                for s in waiting:
                    while s.proc.poll() is None and _sized(_log_text(s.out)) is None:
                        if time.monotonic() - s.began > warm_s:
                            _kill(s.proc)
                            s.late = warm_s
                            break
                        time.sleep(0.05)
                    sized = _sized(_log_text(s.out))
                    if sized is not None:
                        s.need = need_bytes(sized, len(s.job.variants))
                for s in [s for s in waiting if s.late is not None or s.proc.poll() is not None]:
                    waiting.remove(s)  # ended before its admission: torch missing, the module failed to load
                    outcomes, _ = _done(s, outcomes, gpu, cache, say, measured, on_stored, first_run)
                if not waiting:
                    continue
                group = _admit(waiting, room)
                waiting = [s for s in waiting if s not in group]
                _say_admitted(group, waiting, room, say)
                for s in group:
                    s.beside = len(group) - 1
                    s.began = time.monotonic()
                    s.one_at_a_time = room is not None and s.need is not None and s.need > room
                    # whole or not at all: the driver reads it as soon as the file exists
                    write_atomic(
                        s.admit, json.dumps({"need_bytes": s.need, "room_bytes": room}), durable=False
                    )
                # every driver admitted ready (or ended) before any is timed: none warms up beside a timing
                for s in group:
                    while s.proc.poll() is None and DRIVER_READY not in _log_text(s.out):
                        if time.monotonic() - s.began > warm_s:
                            _kill(s.proc)
                            s.late = warm_s
                            break
                        time.sleep(0.05)
                for s in group:
                    if s.proc.poll() is None:
                        s.go.write_text("go\n", encoding="utf-8")
                        # one at a time, its variants warm up after the go: warm_s for each
                        limit = warm_s * (len(s.job.variants) if s.one_at_a_time else 1)
                        try:
                            s.proc.wait(timeout=limit)
                        except subprocess.TimeoutExpired:
                            _kill(s.proc)
                            s.overran = limit
                    outcomes, done = _done(s, outcomes, gpu, cache, say, measured, on_stored, first_run)
                    if s.beside and not s.alone and any(_out_of_memory(o) for o in done):
                        first_run[id(s.job)] = s.beside
                        why = f"ran out of GPU memory beside {_others(s.beside)}: timed again alone next"
                        say(f"{s.job.tasks[0].id}: {why}")
                        queue.insert(0, (s.job, True))
                group = []
        finally:  # nothing left running, whatever happened
            for s in [*waiting, *group]:
                if s.proc.poll() is None:
                    _kill(s.proc)
    order = {t.id: i for i, t in enumerate(tasks)}
    outcomes.sort(key=lambda o: order.get(o.task_id, len(order)))
    return outcomes


def _start(job: Job, alone: bool, tmp: Path, n: int, trials: int, warmup: int, python: str) -> _Started:
    out = tmp / f"{n}.log"
    admit = tmp / f"{n}.admit"
    go = tmp / f"{n}.go"
    with out.open("wb") as fh:
        # its own process group (ended whole, compile workers too) that dies with this one
        cmd = [*reaper.death_signal_prefix(), *driver_command(job, trials, warmup, go, python, admit)]
        proc = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(job), cwd=str(job.tasks[0].root),
            start_new_session=True,
        )  # fmt: skip
    return _Started(job, proc, out, admit, go, time.monotonic(), alone=alone)


def _say_admitted(
    group: list[_Started], waiting: list[_Started], room: int | None, say: Callable[[str], None]
) -> None:
    first = group[0]
    if room is None or first.alone:  # a retry alone says so with its times
        return
    if len(group) == 1 and (first.need is None or first.need > room):
        if first.need is None:
            say(
                f"{first.job.tasks[0].id}: needs an unknown amount of GPU memory: warmed up and timed alone, its "
                "variants side by side"
            )
            return
        say(
            f"{first.job.tasks[0].id}: needs an estimated {gib(first.need)} of GPU memory, more than drivers may "
            f"share ({gib(room)}): alone, its variants warmed up and timed one at a time"
        )
        return
    used = sum(s.need or 0 for s in group)
    say(
        f"{len(group)} driver(s) warm up side by side (an estimated {gib(used)} of the {gib(room)} of GPU memory "
        f"they may share)" + (f"; {len(waiting)} wait for room" if waiting else "")
    )


def _done(
    s: _Started, outcomes: list[Outcome], gpu: GpuSignature, cache: Path | None, say: Callable[[str], None],
    measured: ceilings_mod.Ceilings | None, on_stored: Callable[[BaselineSet], None] | None,
    first_run: dict[int, int],
) -> tuple[list[Outcome], list[Outcome]]:  # fmt: skip
    """(``outcomes`` with the driver's, the driver's): each set stored, a retry's outcomes replacing the first
    run's."""
    ids = {t.id for t in s.job.tasks}
    note = None
    if s.alone and id(s.job) in first_run:  # the retry's outcome replaces the first run's
        note = f"timed alone after running out of GPU memory beside {_others(first_run.pop(id(s.job)))}"
        outcomes = [o for o in outcomes if o.task_id not in ids]
    done = _store(s, gpu, cache, say, measured, note)
    for o in done:
        if o.found is not None and on_stored is not None:
            on_stored(o.found)
    return outcomes + done, done


def _out_of_memory(o: Outcome) -> bool:
    """Some variant of the set failed for want of GPU memory, or the driver did before timing any."""
    if o.found is None:
        return "out of memory" in (o.reason or "").lower()
    return any(t.error is not None and "out of memory" in t.error.lower() for t in o.found.times)


def _store(
    s: _Started, gpu: GpuSignature, cache: Path | None, say: Callable[[str], None],
    measured: ceilings_mod.Ceilings | None, note: str | None = None,
) -> list[Outcome]:  # fmt: skip
    text = _log_text(s.out)
    doc = parse_driver(text)
    first = s.job.tasks[0]
    who = f"{first.id} ({note})" if note else first.id
    if s.late is not None:
        why = f"the baselines driver was not ready (compiled and warmed up) within {s.late:g} s: stopped"
        say(f"{who}: {why}")
        return [Outcome(t.id, reason=why, note=note) for t in s.job.tasks]
    if s.overran is not None and doc is None:
        how = "warmed up and timed" if s.one_at_a_time else "timed"
        why = f"the baselines driver's variants were not {how} within {s.overran:g} s of its go: stopped"
        say(f"{who}: {why}")
        return [Outcome(t.id, reason=why, note=note) for t in s.job.tasks]
    if doc is None:
        why = f"the baselines driver printed no result (rc {s.proc.returncode}): {_tail(text)}"
        say(f"{who}: {why}")
        return [Outcome(t.id, reason=why, note=note) for t in s.job.tasks]
    try:
        found = named_baselines.from_driver(first, s.job.eq, gpu, doc, measured)
    except BeaverError as exc:
        why = str(exc).split(": ", 1)[-1]
        say(f"{who}: {why}")
        return [Outcome(t.id, reason=why, note=note) for t in s.job.tasks]
    if found.one_at_a_time:  # the driver said why it took its variants one at a time
        note = "; ".join(x for x in (note, f"variants timed one at a time: {found.one_at_a_time}") if x)
        who = f"{first.id} ({note})"
    out = []
    for t in s.job.tasks:
        mine = found.model_copy(update={"task_id": t.id})
        out.append(Outcome(t.id, stored=named_baselines.save(t, mine, cache), found=mine,
                           shared_with=None if t is first else first.id, note=note))  # fmt: skip
    memory = []
    if s.need is not None:
        memory.append(f"estimated {gib(s.need)}")
    peak = doc.get("peak_reserved_bytes")
    if isinstance(peak, int) and not isinstance(peak, bool) and peak > 0:
        memory.append(f"peak {gib(peak)} reserved by torch")
    say(
        f"{who}: "
        + describe(found)
        + (f" (also {len(s.job.tasks) - 1} other tasks)" if len(s.job.tasks) > 1 else "")
        + (f" [GPU memory: {', '.join(memory)}]" if memory else "")
    )
    return out


def describe(found: BaselineSet) -> str:
    """One line: each variant's median or why it has none."""
    parts = []
    for m in found.times:
        if m.median_ms is not None:
            parts.append(f"{m.name} {m.median_ms:.4g} ms" + (f" (replays {m.replays})" if m.replays else ""))
        else:
            parts.append(f"{m.name}: {m.error}")
    return "; ".join(parts)


#: The reason of a set ``load_sets`` read for a task the corpus (or its selection) does not hold.
NOT_IN_CORPUS = "not a task of this corpus (or of the tasks chosen): not stored"


def load_sets(tasks: Sequence[Task], path: Path, cache: Path | None = None) -> list[Outcome]:
    """Store the sets of a JSON Lines file (``corpus baselines --out``, recorded elsewhere) for the tasks of
    ``tasks`` they name; a set whose equivalent changed since, or whose task is not among ``tasks``
    (NOT_IN_CORPUS), is not stored and says so. BeaverError for a file that is not such a file."""
    from pydantic import ValidationError

    from beavertui.engine.fileio import read_small_text

    by_id = {t.id: t for t in tasks}
    out = []
    for n, line in enumerate(read_small_text(path, 64 << 20, "baselines file").splitlines(), 1):
        if not line.strip():
            continue
        try:
            found = BaselineSet.model_validate_json(line)
        except ValidationError as exc:
            raise BeaverError(
                f"{path}: line {n}: not a stored set of baselines ({exc.errors()[0]['msg']})"
            ) from None
        task = by_id.get(found.task_id)
        if task is None:
            out.append(Outcome(found.task_id, reason=NOT_IN_CORPUS))
            continue
        try:
            eq = named_baselines.equivalent(task)
        except BeaverError as exc:
            out.append(Outcome(task.id, reason=str(exc)))
            continue
        if eq is None or eq.digest() != found.equivalent_hash:
            out.append(
                Outcome(task.id, reason="its PyTorch equivalent changed since it was recorded: not stored")
            )
            continue
        out.append(Outcome(task.id, stored=named_baselines.save(task, found, cache), found=found))
    return out


# ------------------------------------------------------------------ the table


def _gpu_ceilings(
    tasks: Sequence[Task], gpu: GpuSignature, cache: Path | None = None
) -> ceilings_mod.Ceilings | None:
    """The GPU's measured ceilings: those cached here, else those recorded with the first stored set of
    ``tasks`` (a GPU's, whatever task it was timed for), so that a task without a set still has a roofline."""
    cached = ceilings_mod.cached(gpu, cache)
    if cached is not None:
        return cached
    for t in tasks:
        found = named_baselines.load(t, gpu, cache)
        if found is not None and found.ceilings() is not None:
            return found.ceilings()
    return None


def _stored(
    tasks: Sequence[Task], gpu: GpuSignature, cache: Path | None
) -> Iterator[tuple[Task, baselines.Baseline | None, BaselineSet | None, ceilings_mod.Ceilings | None]]:
    """Each task with what the tables show of it: its reference's stored timing, its stored named baselines
    (None where either is not stored) and the ceilings its roofline takes (its set's, else the GPU's)."""
    gpu_ceilings = _gpu_ceilings(tasks, gpu, cache)
    for t in tasks:
        found = named_baselines.load(t, gpu, cache)
        measured = named_baselines.ceilings_of(gpu, found, cache) or gpu_ceilings
        yield t, baselines.load(t, gpu, harness_hash(t), cache), found, measured


def table_rows(tasks: Sequence[Task], gpu: GpuSignature, cache: Path | None = None) -> list[tuple[str, ...]]:
    """One row per task: the reference's stored time, every named baseline's (ms, median of one call) and
    the reference's speedup against each; "-" where none is stored, "failed" where its variant failed."""
    rows = []
    for t, ref, found, measured in _stored(tasks, gpu, cache):
        row = [t.id, f"{ref.median_ms:.4g}" if ref is not None else "-"]
        for name in named_baselines.NAMES:
            if name == "roofline":
                floor = named_baselines.roofline_ms(t, measured)
                row.append(f"{floor:.4g}" if floor else "-")
                continue
            m = found.time_of(name) if found is not None else None
            if m is None:
                row.append("-")
            elif m.median_ms is None:
                row.append("failed")
            else:
                lib = f" ({m.library})" if m.library and name == "vendor" else ""
                lib += f" ({m.replays})" if m.replays else ""
                ratio = f" [{m.median_ms / ref.median_ms:.2f}x]" if ref is not None else ""
                row.append(f"{m.median_ms:.4g}{lib}{ratio}")
        rows.append(tuple(row))
    return rows


def machine_rows(
    tasks: Sequence[Task], gpu: GpuSignature, cache: Path | None = None
) -> list[tuple[str, ...]]:
    """``table_rows`` for a program to read (``MACHINE_COLUMNS``): each cell one number or empty, so that a
    CSV reader takes every ms column as numbers. The vendor's library, the graph's replayed form and the
    variants that failed get columns of their own; a time over the reference's is a column beside each."""
    rows = []
    for t, ref, found, measured in _stored(tasks, gpu, cache):
        ref_ms = ref.median_ms if ref is not None else None
        row = [t.id, _number(ref_ms)]
        library, replays, failed = "", "", []
        for name in named_baselines.NAMES:
            if name == "roofline":
                row.append(_number(named_baselines.roofline_ms(t, measured) or None))
                continue
            m = found.time_of(name) if found is not None else None
            ms = m.median_ms if m is not None else None
            if m is not None and ms is None:
                failed.append(name)
            if m is not None and ms is not None and name == "vendor" and m.library:
                library = m.library
            if m is not None and ms is not None and name == "graph" and m.replays:
                replays = m.replays
            row += [_number(ms), _number(ms / ref_ms if ms is not None and ref_ms else None)]
        why = named_baselines.why_not_loaded(t, gpu, cache) if found is None else ""
        rows.append((*row, library, replays, "+".join(failed), why))
    return rows


def stored_elsewhere(task: Task, cache: Path | None = None) -> list[Path]:
    """The files of ``task``'s named baselines kept in the user cache (one per GPU signature)."""
    from beavertui.engine.paths import cache_dir

    folder = (cache or cache_dir()) / "baselines" / task.id / "named"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def missing_note(tasks: Sequence[Task], gpu: GpuSignature, cache: Path | None = None) -> str:
    """What the table of ``tasks`` on ``gpu`` leaves out, and why: the tasks without a set of named
    baselines (grouped by reason) and how many have no reference time stored; "" when nothing is missing."""
    why: dict[str, list[str]] = {}
    no_ref = 0
    for t in tasks:
        if baselines.load(t, gpu, harness_hash(t), cache) is None:
            no_ref += 1
        if named_baselines.load(t, gpu, cache) is None:
            why.setdefault(named_baselines.why_not_loaded(t, gpu, cache), []).append(t.id)
    parts = [
        f"no named baselines (eager to vendor -) for {len(ids)} task(s), "
        f"{', '.join(ids[:6])}{', ...' if len(ids) > 6 else ''}: {reason}"
        for reason, ids in why.items()
    ]
    if no_ref:
        parts.append(
            f"no reference time stored on this GPU for {no_ref} of {len(tasks)} task(s) (reference ms -, and no "
            "[r x]): corpus validate times and stores it"
        )
    return (" Left out: " + "; ".join(parts) + ".") if parts else ""


def _number(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def fully_timed(tasks: Sequence[Task], gpu: GpuSignature, cache: Path | None = None) -> int:
    """How many of ``tasks`` have a stored eager, compile, compile_ro and graph time on ``gpu``."""
    n = 0
    for t in tasks:
        found = named_baselines.load(t, gpu, cache)
        if found is not None and all(
            (m := found.time_of(name)) is not None and m.median_ms is not None
            for name in named_baselines.TORCH_NAMES
        ):
            n += 1
    return n


TABLE_COLUMNS: tuple[str, ...] = (
    "task", "reference ms", *(f"{named_baselines.SHORT[n]} ms" for n in named_baselines.NAMES)
)  # fmt: skip

TABLE_NOTE = (
    "ms: median of one call on this GPU. reference: the task's expert reference, timed by its family's method "
    "(corpus validate). eager, compile, compile-ro, graph, vendor: the task's PyTorch equivalent timed by "
    "baselines_driver.py (CUDA events, L2 flushed before each call); [r x]: that time over the reference's, so "
    "above 1 the reference is faster. roofline: the least time of the declared work at the GPU's measured copy "
    "bandwidth and bf16 rate. failed: the variant could not run (the stored set says why). graph (GraphModel): "
    "the CUDA Graph replays the equivalent's capturable form GraphModel (its output checked equal to Model's "
    "before timing), not the eager call, which cannot be captured."
)


MACHINE_COLUMNS: tuple[str, ...] = (
    "task",
    "reference ms",
    *(
        col
        for n in named_baselines.NAMES
        for col in (
            (f"{named_baselines.SHORT[n]} ms",)
            if n == "roofline"
            else (f"{named_baselines.SHORT[n]} ms", f"{named_baselines.SHORT[n]} / reference (x)")
        )
    ),
    "vendor library",
    "graph replays",
    "failed",
    "why no set",
)

MACHINE_NOTE = (
    "ms: median of one call on this GPU, empty where none is stored. reference: the task's expert reference, "
    "timed by its family's method (corpus validate). eager, compile, compile-ro, graph, vendor: the task's "
    "PyTorch equivalent timed by baselines_driver.py (CUDA events, L2 flushed before each call); "
    "NAME / reference (x): that time over the reference's, so above 1 the reference is faster. roofline: the "
    "least time of the declared work at the GPU's measured copy bandwidth and bf16 rate. vendor library: the "
    "library the vendor baseline calls. graph replays: the equivalent's capturable form the CUDA Graph replays (its "
    "output checked equal to Model's before timing), where the eager call cannot be captured. failed: the variants that could not run, joined by + (the stored set "
    "says why). why no set: why the task has no named baselines on this GPU (empty where it has)."
)


def quote(cmd: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in cmd)
