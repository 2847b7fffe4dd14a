"""`corpus baselines`: record every task's named baselines on this GPU, and the table of them.

Tasks with the same PyTorch equivalent (the same module, arguments and style: reduce_00 to reduce_03, the
release instances of one kernelbench problem) are timed once and the set stored for each of them. A driver
process (timing/baselines_driver.py) per equivalent: up to ``jobs`` of them build and warm up their variants
side by side (torch.compile's compilation is the long part, on the CPU), each prints its ready line and
waits; then each is given its go in turn and timed alone, the others idle. A driver of which some variant
ran out of GPU memory beside the others (their models and inputs stay loaded) is run again at the end, by
itself. Whatever cannot be timed says why in one line (torch missing, no equivalent declared, a variant
torch.compile refuses).
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beavertui.engine.corpus.harness import harness_hash
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.host import ceilings as ceilings_mod
from beavertui.engine.host import reaper
from beavertui.engine.session.events import GpuSignature
from beavertui.engine.timing import baselines, named_baselines
from beavertui.engine.timing.named_baselines import BaselineSet, Equivalent

#: The driver script, run with this interpreter.
DRIVER = Path(named_baselines.__file__).with_name("baselines_driver.py")
DRIVER_TAG = "BEAVER_BASELINES "
DRIVER_READY = "BEAVER_BASELINES_READY"


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
    job: Job, trials: int, warmup: int, go: Path | None, python: str = sys.executable
) -> list[str]:
    cmd = [
        python, str(DRIVER), "--module", str(job.eq.module), "--args", json.dumps(dict(job.eq.args)),
        "--style", job.eq.style, "--trials", str(trials), "--warmup", str(warmup),
        "--variants", ",".join(job.variants),
    ]  # fmt: skip
    if go is not None:
        cmd += ["--go-file", str(go), "--go-timeout", "900"]
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
    go: Path
    began: float
    late: float | None = None
    """Set when it was stopped for not being ready within this many seconds."""


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


def record(
    tasks: Sequence[Task], gpu: GpuSignature, *, jobs: int = 4, trials: int = 20, warmup: int = 3,
    budget_s: float | None = None, warm_s: float = 600.0, python: str = sys.executable,
    cache: Path | None = None, progress: Callable[[str], None] | None = None,
    measured: ceilings_mod.Ceilings | None = None, on_stored: Callable[[BaselineSet], None] | None = None,
) -> list[Outcome]:  # fmt: skip
    """Time and store the named baselines of ``tasks`` on ``gpu`` (see the module's docstring). Stops
    starting drivers once ``budget_s`` seconds have passed; the tasks not reached say so. ``on_stored`` is
    given each set as soon as it is stored (a run cut short keeps what it stored)."""
    say = progress or (lambda _s: None)
    p = plan(tasks)
    outcomes = [Outcome(tid, reason=why) for tid, why in p.skipped.items()]
    t0 = time.monotonic()
    queue = list(p.jobs)
    alone: list[Job] = []
    """Jobs whose variants ran out of GPU memory beside other drivers: timed again, one at a time, at the end
    (their first sets stay stored until then)."""
    with tempfile.TemporaryDirectory(prefix="beaver-baselines-") as tmp:
        n = 0
        while queue or alone:
            if budget_s is not None and time.monotonic() - t0 > budget_s:
                for job in queue:
                    outcomes += [
                        Outcome(t.id, reason="not reached within the time budget") for t in job.tasks
                    ]
                for job in alone:
                    say(f"{job.tasks[0].id}: not timed again alone within the time budget")
                break
            if queue:
                batch, queue = queue[: max(1, jobs)], queue[max(1, jobs) :]
            else:
                batch, alone = alone[:1], alone[1:]
                say(
                    f"{batch[0].tasks[0].id}: timed again alone (it ran out of GPU memory beside other drivers)"
                )
                ids = {t.id for t in batch[0].tasks}
                outcomes = [o for o in outcomes if o.task_id not in ids]
            started = []
            try:
                for job in batch:
                    n += 1
                    out = Path(tmp) / f"{n}.log"
                    go = Path(tmp) / f"{n}.go"
                    with out.open("wb") as fh:
                        # its own process group (ended whole, compile workers too) that dies with this one
                        cmd = [
                            *reaper.death_signal_prefix(),
                            *driver_command(job, trials, warmup, go, python),
                        ]
                        proc = subprocess.Popen(
                            cmd, stdout=fh, stderr=subprocess.STDOUT,
                            env=_env(job), cwd=str(job.tasks[0].root), start_new_session=True,
                        )  # fmt: skip
                    started.append(_Started(job, proc, out, go, time.monotonic()))
                # every driver of the batch ready (or ended) before any is timed: none warms up beside a timing
                for s in started:
                    while s.proc.poll() is None and DRIVER_READY not in _log_text(s.out):
                        if time.monotonic() - s.began > warm_s:
                            _kill(s.proc)
                            s.late = warm_s
                            break
                        time.sleep(0.05)
                for s in started:
                    if s.proc.poll() is None:
                        s.go.write_text("go\n", encoding="utf-8")
                        try:
                            s.proc.wait(timeout=warm_s)
                        except subprocess.TimeoutExpired:
                            _kill(s.proc)
                    done = _store(s, gpu, cache, say, measured)
                    if len(started) > 1 and any(_out_of_memory(o) for o in done):
                        alone.append(s.job)
                    outcomes += done
                    for o in done:
                        if o.found is not None and on_stored is not None:
                            on_stored(o.found)
            finally:  # nothing left running, whatever happened
                for s in started:
                    if s.proc.poll() is None:
                        _kill(s.proc)
    order = {t.id: i for i, t in enumerate(tasks)}
    outcomes.sort(key=lambda o: order.get(o.task_id, len(order)))
    return outcomes


def _out_of_memory(o: Outcome) -> bool:
    """Some variant of the set failed for want of GPU memory."""
    return o.found is not None and any(
        t.error is not None and "out of memory" in t.error.lower() for t in o.found.times
    )


def _store(
    s: _Started, gpu: GpuSignature, cache: Path | None, say: Callable[[str], None],
    measured: ceilings_mod.Ceilings | None,
) -> list[Outcome]:  # fmt: skip
    text = _log_text(s.out)
    doc = parse_driver(text)
    first = s.job.tasks[0]
    if s.late is not None:
        why = f"the baselines driver was not ready (compiled and warmed up) within {s.late:g} s: stopped"
        say(f"{first.id}: {why}")
        return [Outcome(t.id, reason=why) for t in s.job.tasks]
    if doc is None:
        why = f"the baselines driver printed no result (rc {s.proc.returncode}): {_tail(text)}"
        say(f"{first.id}: {why}")
        return [Outcome(t.id, reason=why) for t in s.job.tasks]
    try:
        found = named_baselines.from_driver(first, s.job.eq, gpu, doc, measured)
    except BeaverError as exc:
        say(str(exc))
        return [Outcome(t.id, reason=str(exc).split(": ", 1)[-1]) for t in s.job.tasks]
    out = []
    for t in s.job.tasks:
        mine = found.model_copy(update={"task_id": t.id})
        out.append(Outcome(t.id, stored=named_baselines.save(t, mine, cache), found=mine,
                           shared_with=None if t is first else first.id))  # fmt: skip
    say(
        f"{first.id}: "
        + describe(found)
        + (f" (also {len(s.job.tasks) - 1} other tasks)" if len(s.job.tasks) > 1 else "")
    )
    return out


def describe(found: BaselineSet) -> str:
    """One line: each variant's median or why it has none."""
    parts = []
    for m in found.times:
        if m.median_ms is not None:
            parts.append(f"{m.name} {m.median_ms:.4g} ms")
        else:
            parts.append(f"{m.name}: {m.error}")
    return "; ".join(parts)


def load_sets(tasks: Sequence[Task], path: Path, cache: Path | None = None) -> list[Outcome]:
    """Store the sets of a JSON Lines file (``corpus baselines --out``, recorded elsewhere) for the tasks of
    ``tasks`` they name; a set whose equivalent changed since is not stored and says so. BeaverError for a
    file that is not such a file."""
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


def table_rows(tasks: Sequence[Task], gpu: GpuSignature, cache: Path | None = None) -> list[tuple[str, ...]]:
    """One row per task: the reference's stored time, every named baseline's (ms, median of one call) and
    the reference's speedup against each; "-" where none is stored, "failed" where its variant failed."""
    rows = []
    for t in tasks:
        ref = baselines.load(t, gpu, harness_hash(t), cache)
        found = named_baselines.load(t, gpu, cache)
        measured = named_baselines.ceilings_of(gpu, found, cache)
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
                ratio = f" [{m.median_ms / ref.median_ms:.2f}x]" if ref is not None else ""
                row.append(f"{m.median_ms:.4g}{lib}{ratio}")
        rows.append(tuple(row))
    return rows


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
    "bandwidth and bf16 rate. failed: the variant could not run (the stored set says why)."
)


def quote(cmd: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in cmd)
