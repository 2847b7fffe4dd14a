"""A batch run: its manifest made (or read back to resume), then run, and its summary written.

``prepare`` (service/batch_prepare.py) turns ``BatchOptions`` into a run directory with its manifest (or
reopens one for ``--resume``); ``run_batch`` chooses the toolchain (this machine's GPUs under the scheduler,
or a recorded one) and the executor (threads here, or Ray), runs it and writes the summary into run.json.
The ``batch`` command and the TUI's batch dashboard both call these two; infrastructure failures are
reported here with their count.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from beavertui.batch.admission import Admission
from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.local_executor import Flag, Tracker, plan, run_local
from beavertui.batch.rundir import RunManifest, log_stage, read_infra, write_manifest
from beavertui.batch.timing_lane import WORKERS_PER_GPU, TimingLane
from beavertui.engine.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_OK, BeaverError, NoGpuError
from beavertui.engine.host.gpu import visible_gpus, wait_idle
from beavertui.engine.session.describe import TOKEN_LIMIT, TOKEN_LIMIT_FIX
from beavertui.service.batch_prepare import PAUSE_CHOICES, BatchOptions, PreparedRun, stderr_line


def default_cache_dir() -> Path:
    from beavertui.engine.paths import cache_dir

    return cache_dir() / "builds"


def stop_builds_for_timing(setting: str, gpus: list[str]) -> bool:
    """Whether builds stop while a GPU is held alone for timing (--builds-in-timing): ``go`` (the default)
    never, ``stop`` always, ``auto`` on a machine with one GPU (with more, one GPU's timing would stop the
    builds the others wait for). Builds beside a timing stage make it longer, not its measured times
    (docs/scheduling.md)."""
    if setting not in ("auto", "go", "stop"):
        raise BeaverError(f"builds in timing {setting!r}: expected auto, go or stop")
    return setting == "stop" or (setting == "auto" and len(gpus) <= 1)


def pauses_for_timing(setting: str) -> tuple[bool, bool]:
    """(whether a timing stage may stop the runs on its GPU at all, whether sanitizer and profiler runs too)
    for --pause-for-timing ``runs``, ``all`` or ``none``."""
    if setting not in PAUSE_CHOICES:
        raise BeaverError(f"pause for timing {setting!r}: expected {', '.join(PAUSE_CHOICES)}")
    return setting != "none", setting == "all"


def make_toolchain(
    spec: str, gpus: list[str], options: BatchOptions, run_dir: Path | None = None
) -> tuple[Any, GpuPool, BuildSlots, Any]:
    """(toolchain, pool, build slots, cache) for ``local`` or ``recorded:PATH``; with ``run_dir``, the local
    toolchain logs every stage's wait and hold to its stages.jsonl."""
    from beavertui.batch.cache import CompileCache
    from beavertui.batch.placement import ScheduledToolchain, scheduled_local
    from beavertui.engine.toolchain.resolve import build_toolchain, parse_toolchain
    from beavertui.service.environment import local_config

    builds = BuildSlots(
        os.cpu_count() or 1, stop_for_timing=stop_builds_for_timing(options.builds_in_timing, gpus)
    )
    kind, _path = parse_toolchain(spec)
    if kind == "recorded":
        pool = GpuPool(gpus or ["0"], shared=options.gpu_share)
        inner = build_toolchain(spec, unknown="fail")
        return ScheduledToolchain(inner, pool, builds), pool, builds, None
    if not gpus:
        from beavertui.engine.toolchain.resolve import NO_GPU, NO_GPU_TOOLCHAIN

        raise NoGpuError(NO_GPU + NO_GPU_TOOLCHAIN)
    # a timing stage stops the long runs on its GPU instead of waiting minutes for them (docs/scheduling.md)
    stop_runs, stop_instrumented = pauses_for_timing(options.pause_for_timing)
    pool = GpuPool(
        gpus,
        shared=options.gpu_share,
        quiet=wait_idle if stop_runs else None,
        pause_instrumented=stop_instrumented,
    )
    cache = None
    if not options.no_cache:
        root = options.cache or default_cache_dir()
        try:
            cache = CompileCache(root)
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise BeaverError(
                f"{root}: cannot use it as the compile cache ({why}); pass --no-cache"
            ) from None
    on_stage = partial(log_stage, run_dir) if run_dir is not None else None
    return scheduled_local(pool, builds, cache, local_config(), on_stage=on_stage), pool, builds, cache


class _Either:
    """Set when any of its flags is set (the user's stop, the start window's end, or no GPU left)."""

    def __init__(self, *events: Flag) -> None:
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


class _Deadline:
    """Set once ``seconds`` have passed since it was made (the end of ``--start-until``'s window)."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def is_set(self) -> bool:
        return time.monotonic() >= self.at


#: How many cut sessions an interrupted batch names, longest in flight first.
CUT_SHOWN = 10


def _go_on(options: BatchOptions, run_dir: Path, retry_infra: bool = False) -> str:
    """What continues the run, as the batch's lines say it: ``--resume RUN_DIR`` (with ``--retry-infra``),
    or the command that made the batch (``options.goes_on``: reproduce's, run again)."""
    if options.goes_on is not None:
        return options.goes_on + (" with --retry-infra," if retry_infra else "")
    return f"--resume {run_dir}" + (" --retry-infra" if retry_infra else "")


def _interrupted(
    manifest: RunManifest, run_dir: Path, tracker: Tracker, say: Callable[[str], None], go_on: str
) -> NoReturn:
    """Ctrl-C: record the run as interrupted with the way on, then end the process at once.

    The sessions in flight may be waiting on an endpoint for minutes; waiting for them (or for their
    threads at interpreter exit) is what kept an interrupted batch running. Ending now is a kill, which
    every session file survives by design: the cut sessions are resumed from their valid prefix.
    """
    totals = tracker.totals()
    left = totals["total"] - totals["done"] + totals["failed"]
    manifest.status = "interrupted"
    manifest.summary = {**(manifest.summary or {}), **totals, "interrupted": True}
    with contextlib.suppress(OSError):
        write_manifest(run_dir, manifest)
    cut = tracker.in_flight()
    say(
        f"beavertui: interrupted: {totals['done']}/{totals['total']} sessions done, {left} wait unfinished "
        f"({totals['running']} were running and are cut): continue with {go_on}"
    )
    for line in cut[:CUT_SHOWN]:
        say(f"beavertui: cut: {line}")
    if len(cut) > CUT_SHOWN:
        say(f"beavertui: cut: {len(cut) - CUT_SHOWN} more")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(130)


Progress = Callable[[Tracker, int], AbstractContextManager[Any]]
"""Shows progress while the batch runs: given the tracker and how many sessions run at once. The service
prints nothing itself; its caller chooses the display (the CLI's progress table, the TUI's dashboard)."""


def silent(tracker: Tracker, parallel: int) -> AbstractContextManager[Any]:
    """The display that shows nothing (``batch --quiet``)."""
    return nullcontext()


def run_batch(
    options: BatchOptions,
    run: PreparedRun,
    *,
    display: Progress,
    stop: threading.Event | None = None,
    say: Callable[[str], None] = stderr_line,
) -> int:
    """Run the batch and write its summary into run.json; ``say`` gets the summary lines. Returns the exit
    status (engine/errors.py): 0 every session evaluated, whatever the models did; 3 sessions left without a
    verdict (failed to run, or ended by an infrastructure failure after their retries: ``--resume RUN_DIR
    --retry-infra`` runs them again) or no GPU left; 130 stopped, or the ``--start-until`` window closed,
    before the end, the rest waiting for ``--resume``. The run folder's lock is released at the end.

    ``display`` shows the progress while the batch runs (``silent`` shows none); once ``stop`` is set
    no new session starts, the sessions in flight finish, and the rest wait for ``--resume``.
    """
    try:
        return _run_batch(options, run, display=display, stop=stop, say=say)
    finally:
        if run.lock is not None:
            run.lock.release()


def _run_batch(
    options: BatchOptions,
    run: PreparedRun,
    *,
    display: Progress,
    stop: threading.Event | None,
    say: Callable[[str], None],
) -> int:
    gpus = visible_gpus(options.gpus)
    jobs = plan(run.manifest, run.run_dir)
    if options.retry_infra:
        jobs = [dataclasses.replace(j, retry_infra=True) for j in jobs]
    tracker = Tracker(jobs)
    parallel = options.jobs or max(2, 32 * max(1, len(gpus)))  # a ceiling: the admission decides when
    t0 = time.monotonic()
    window = _Deadline(options.start_until_s) if options.start_until_s is not None else None
    if options.executor == "ray":
        _run_on_ray(options, run, jobs, tracker, parallel, display=display, stop=stop, window=window, say=say)
        ran = _Ran(None, None, None)
    else:
        ran = _run_here(
            options, run, jobs, tracker, gpus, parallel, display=display, stop=stop, window=window, say=say
        )
    wall = time.monotonic() - t0
    totals = tracker.totals()
    infra = read_infra(run.run_dir)
    summary = _summary(totals, infra, wall, ran)
    no_gpu = ran.pool is not None and ran.pool.exhausted.is_set()
    run.manifest.summary = summary
    run.manifest.status = "finished" if totals["done"] == totals["total"] and not no_gpu else "interrupted"
    write_manifest(run.run_dir, run.manifest)
    _say_totals(options, run.run_dir, totals, summary, infra, wall, ran, say)
    return _exit_status(options, run.run_dir, totals, no_gpu=no_gpu, stop=stop, window=window, say=say)


@dataclasses.dataclass(frozen=True)
class _Ran:
    """What the local executor ran with (None under Ray): its GPU pool, timing lane and compile cache."""

    pool: GpuPool | None
    lane: TimingLane | None
    cache: Any


def _run_on_ray(
    options: BatchOptions,
    run: PreparedRun,
    jobs: list[Any],
    tracker: Tracker,
    parallel: int,
    *,
    display: Progress,
    stop: threading.Event | None,
    window: _Deadline | None,
    say: Callable[[str], None],
) -> None:
    """Run the jobs on a Ray cluster (no dashboard stop, no --start-until: Ray schedules them itself)."""
    from beavertui.batch.ray_executor import NODE_CACHE, run_ray
    from beavertui.service.environment import local_config

    manifest, run_dir = run.manifest, run.run_dir
    if stop is not None:
        raise BeaverError("the Ray executor cannot be stopped from the dashboard; run it without --tui")
    if window is not None:
        raise BeaverError("--start-until works with the local executor; Ray schedules its sessions itself")
    manifest.gpus = []
    write_manifest(run_dir, manifest)
    # each node's compile cache: --cache DIR names that folder on every node, --no-cache none
    node_cache = None if options.no_cache else str(options.cache) if options.cache else NODE_CACHE
    try:
        with display(tracker, parallel):
            run_ray(
                jobs,
                manifest,
                run_dir,
                tracker,
                address=options.address,
                toolchain=run.toolchain,
                parallel=options.jobs,
                config=local_config() if run.toolchain == "local" else None,
                cache=node_cache,
            )
    except KeyboardInterrupt:
        _interrupted(manifest, run_dir, tracker, say, _go_on(options, run_dir))


def _run_here(
    options: BatchOptions,
    run: PreparedRun,
    jobs: list[Any],
    tracker: Tracker,
    gpus: list[Any],
    parallel: int,
    *,
    display: Progress,
    stop: threading.Event | None,
    window: _Deadline | None,
    say: Callable[[str], None],
) -> _Ran:
    """Run the jobs on this machine's GPUs, until done, stopped, past --start-until or out of GPUs."""
    manifest, run_dir, tasks = run.manifest, run.run_dir, run.tasks
    toolchain, pool, builds, cache = make_toolchain(run.toolchain, gpus, options, run_dir)
    manifest.gpus = [g.index for g in pool.gpus]
    write_manifest(run_dir, manifest)
    halt = _Either(pool.exhausted, *(f for f in (stop, window) if f is not None))
    # a timing stage holds its GPU alone; the lane's other workers prepare the next timings meanwhile
    lane = (
        TimingLane(toolchain, tasks, workers=len(pool.gpus) * WORKERS_PER_GPU)
        if options.timing_lane
        else None
    )
    try:
        with display(tracker, parallel):
            run_local(
                jobs,
                tasks,
                toolchain,
                run_dir,
                parallel=parallel,
                retries=manifest.retries,
                tracker=tracker,
                stop=halt,
                admission=Admission(pool, builds),
                lane=lane,
                replies=run.replies,
            )
    except KeyboardInterrupt:
        _interrupted(manifest, run_dir, tracker, say, _go_on(options, run_dir))
    return _Ran(pool, lane, cache)


def _summary(totals: dict[str, Any], infra: list[dict[str, Any]], wall: float, ran: _Ran) -> dict[str, Any]:
    """The manifest's summary of the run: the tracker's totals, wall time, infrastructure failures, and the
    timing lane's, compile cache's and GPUs' accounts where the run had them."""
    summary: dict[str, Any] = {
        **totals,
        "wall_s": round(wall, 2),
        "infra_failures": len(infra),
        "infra_retried": sum(1 for r in infra if r.get("retried")),
    }
    if ran.lane is not None:
        summary["timing_lane"] = {"appended": ran.lane.appended, "failed": len(ran.lane.failed)}
    if ran.cache is not None:
        summary["compile_cache"] = ran.cache.summary()
    if ran.pool is not None:
        summary["gpu_busy_fraction"] = {k: round(v, 3) for k, v in ran.pool.busy_fraction(wall).items()}
        summary["gpus_removed"] = {g.index: g.failures[-1] for g in ran.pool.gpus if not g.healthy}
    return summary


def _say_totals(
    options: BatchOptions,
    run_dir: Path,
    totals: dict[str, Any],
    summary: dict[str, Any],
    infra: list[dict[str, Any]],
    wall: float,
    ran: _Ran,
    say: Callable[[str], None],
) -> None:
    """The run's account on stderr: sessions, infrastructure failures, token limits, the timing lane, the
    compile cache, GPUs taken out, and the metrics command."""
    lane, cache = ran.lane, ran.cache
    say(
        f"beavertui: {totals['done']}/{totals['total']} sessions ({totals['skipped']} already done), "
        f"{totals['passed']} passed, {totals['infra_ended']} ended by infrastructure failures, "
        f"{totals['attempts']} attempts in {wall:.1f} s"
    )
    if infra:
        say(
            f"beavertui: {len(infra)} infrastructure failures ({summary['infra_retried']} retried); their "
            "attempts are excluded from scores and counted. First: " + str(infra[0].get("detail"))
        )
    if totals["token_limit"]:
        say(
            f"beavertui: {totals['token_limit']} attempt(s) had no code because {TOKEN_LIMIT}: {TOKEN_LIMIT_FIX}"
        )
    if lane is not None and lane.failed:
        say(
            f"beavertui: timing lane: {len(lane.failed)} timing(s) failed on the machine's side and stay pending "
            f"(their scores are not final; {_go_on(options, run_dir)} times them). First: {lane.failed[0]}"
        )
    if cache is not None and cache.stats.corrupt:
        say(
            f"beavertui: compile cache: {cache.stats.corrupt} corrupt entries removed and built again "
            f"(first: {cache.stats.first_corrupt})"
        )
    for idx, why in summary.get("gpus_removed", {}).items():
        say(f"beavertui: GPU {idx} taken out of the schedule after repeated failures: {why}")
    say(f"beavertui: metrics: beavertui metrics {run_dir}")


def _exit_status(
    options: BatchOptions,
    run_dir: Path,
    totals: dict[str, Any],
    *,
    no_gpu: bool,
    stop: threading.Event | None,
    window: _Deadline | None,
    say: Callable[[str], None],
) -> int:
    """The exit status, and what to do about sessions left unfinished or without a verdict."""
    if no_gpu:
        left = totals["total"] - totals["done"] + totals["failed"]
        say(
            f"beavertui: every GPU was taken out of the schedule; {left} sessions wait unfinished: "
            f"fix the GPU, then continue with {_go_on(options, run_dir)}"
        )
        return EXIT_INFRA
    if stop is not None and stop.is_set() and totals["done"] < totals["total"]:
        left = totals["total"] - totals["done"] + totals["failed"]
        say(f"beavertui: stopped; {left} sessions wait unfinished: continue with {_go_on(options, run_dir)}")
        return EXIT_INTERRUPTED
    if window is not None and window.is_set() and totals["done"] < totals["total"]:
        left = totals["total"] - totals["done"] + totals["failed"]
        say(
            f"beavertui: no session started after {options.start_until_s:g} s (--start-until) and the "
            f"sessions in flight finished; {left} sessions wait unfinished: continue with {_go_on(options, run_dir)}"
        )
        return EXIT_INTERRUPTED
    evaluated = totals["done"] - totals["failed"] - totals["infra_ended"]
    again = f"fix the cause, then {_go_on(options, run_dir, retry_infra=True)} runs them again"
    if totals["total"] and evaluated == 0:
        say(
            f"beavertui: no session was evaluated: {totals['infra_ended']} ended by infrastructure failures "
            f"and {totals['failed']} failed to run (see {run_dir / 'infra.jsonl'}): {again}"
        )
        return EXIT_INFRA
    if totals["infra_ended"] or totals["failed"]:
        say(
            f"beavertui: {totals['infra_ended'] + totals['failed']} of {totals['total']} sessions have no "
            f"verdict: {totals['infra_ended']} ended by infrastructure failures and {totals['failed']} failed "
            f"to run (see {run_dir / 'infra.jsonl'}): {again}"
        )
        return EXIT_INFRA
    return EXIT_OK
