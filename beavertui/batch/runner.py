"""Putting a batch together: toolchain and resources, executor, progress display, final summary.

Called by the ``batch`` command after the manifest exists. It chooses the toolchain (this machine's GPUs
under the scheduler, or a recorded one) and the executor (threads here, or Ray), then writes the
summary into run.json and prints it. Infrastructure failures are reported here with their count.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, NoReturn

from beavertui.batch.resources import BuildSlots, GpuPool
from beavertui.batch.rundir import RunManifest, read_infra, write_manifest
from beavertui.batch.scheduler import Tracker, plan, run_local
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "beavertui" / "builds"


def make_toolchain(spec: str, gpus: list[str], args: argparse.Namespace) -> tuple[Any, GpuPool, Any]:
    """(toolchain, pool, cache) for ``local`` or ``recorded:PATH``."""
    from beavertui.batch.cache import CompileCache
    from beavertui.batch.scheduled import ScheduledLocalToolchain, ScheduledToolchain

    builds = BuildSlots(os.cpu_count() or 1)
    if spec.startswith("recorded:"):
        from beavertui.engine.toolchain.recorded import RecordedToolchain

        pool = GpuPool(gpus or ["0"], shared=args.gpu_share)
        inner = RecordedToolchain.load(spec.split(":", 1)[1], unknown="fail")
        return ScheduledToolchain(inner, pool, builds), pool, None
    if spec != "local":
        raise BeaverError(f"--toolchain {spec}: expected local or recorded:PATH")
    if not gpus:
        raise BeaverError("no NVIDIA GPU visible: run on a GPU machine, or use --toolchain recorded:PATH")
    pool = GpuPool(gpus, shared=args.gpu_share)
    cache = None
    if not args.no_cache:
        root = args.cache or default_cache_dir()
        try:
            cache = CompileCache(root)
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            raise BeaverError(
                f"{root}: cannot use it as the compile cache ({why}); pass --no-cache"
            ) from None
    return ScheduledLocalToolchain(pool, builds, cache), pool, cache


class _Either:
    """Set when any of its events is set (the user's stop, or no GPU left)."""

    def __init__(self, *events: threading.Event) -> None:
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


def _interrupted(
    manifest: RunManifest, run_dir: Path, tracker: Tracker, say: Callable[[str], None]
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
    say(
        f"beavertui: interrupted: {totals['done']}/{totals['total']} sessions done, {left} wait unfinished "
        f"({totals['running']} were running and are cut): continue with --resume {run_dir}"
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(130)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


Progress = Callable[[Tracker, int], AbstractContextManager[Any]]
"""Shows progress while the batch runs: given the tracker and how many sessions run at once."""


def run_batch(
    args: argparse.Namespace,
    manifest: RunManifest,
    run_dir: Path,
    tasks: dict[str, Task],
    *,
    display: Progress | None = None,
    stop: threading.Event | None = None,
    say: Callable[[str], None] = _stderr,
) -> int:
    """Run the batch and write its summary into run.json; ``say`` gets the summary lines.

    ``display`` replaces the progress table (a dashboard reads the tracker instead); once ``stop`` is set
    no new session starts, the sessions in flight finish, and the rest wait for ``--resume``.
    """
    from beavertui.batch.progress import Display
    from beavertui.commands.batch import _visible_gpus

    def show(tracker: Tracker, parallel: int, **kw: Any) -> AbstractContextManager[Any]:
        return display(tracker, parallel) if display is not None else Display(tracker, parallel, **kw)

    gpus = _visible_gpus(args.gpus)
    jobs = plan(manifest, run_dir)
    tracker = Tracker(jobs)
    parallel = args.jobs or max(2, 4 * max(1, len(gpus)) + (os.cpu_count() or 1))
    t0 = time.monotonic()
    cache = None
    pool: GpuPool | None = None
    if args.executor == "ray":
        from beavertui.batch.ray_executor import run_ray

        manifest.gpus = []
        write_manifest(run_dir, manifest)
        if stop is not None:
            raise BeaverError("the Ray executor cannot be stopped from the dashboard; run it without --tui")
        with show(tracker, parallel, live=False if args.quiet else None, interval=30.0):
            run_ray(jobs, manifest, run_dir, tracker, address=args.address, toolchain=args.toolchain)
    else:
        toolchain, pool, cache = make_toolchain(args.toolchain, gpus, args)
        manifest.gpus = [g.index for g in pool.gpus]
        write_manifest(run_dir, manifest)
        halt = pool.exhausted if stop is None else _Either(pool.exhausted, stop)
        progress = nullcontext() if args.quiet and display is None else show(tracker, parallel)
        try:
            with progress:
                run_local(
                    jobs,
                    tasks,
                    toolchain,
                    run_dir,
                    parallel=parallel,
                    retries=manifest.retries,
                    tracker=tracker,
                    stop=halt,
                )
        except KeyboardInterrupt:
            _interrupted(manifest, run_dir, tracker, say)
    wall = time.monotonic() - t0
    totals = tracker.totals()
    infra = read_infra(run_dir)
    summary: dict[str, Any] = {
        **totals,
        "wall_s": round(wall, 2),
        "infra_failures": len(infra),
        "infra_retried": sum(1 for r in infra if r.get("retried")),
    }
    if cache is not None:
        summary["compile_cache"] = cache.summary()
    if pool is not None:
        summary["gpu_busy_fraction"] = {k: round(v, 3) for k, v in pool.busy_fraction(wall).items()}
        summary["gpus_removed"] = {g.index: g.failures[-1] for g in pool.gpus if not g.healthy}
    manifest.summary = summary
    no_gpu = pool is not None and pool.exhausted.is_set()
    manifest.status = "finished" if totals["done"] == totals["total"] and not no_gpu else "interrupted"
    write_manifest(run_dir, manifest)
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
    if cache is not None and cache.stats.corrupt:
        say(
            f"beavertui: compile cache: {cache.stats.corrupt} corrupt entries removed and built again "
            f"(first: {cache.stats.first_corrupt})"
        )
    for idx, why in summary.get("gpus_removed", {}).items():
        say(f"beavertui: GPU {idx} taken out of the schedule after repeated failures: {why}")
    say(f"beavertui: metrics: beavertui metrics {run_dir}")
    if no_gpu:
        left = totals["total"] - totals["done"] + totals["failed"]
        say(
            f"beavertui: every GPU was taken out of the schedule; {left} sessions wait unfinished: "
            f"fix the GPU, then continue with --resume {run_dir}"
        )
        return 2
    if stop is not None and stop.is_set() and totals["done"] < totals["total"]:
        left = totals["total"] - totals["done"] + totals["failed"]
        say(f"beavertui: stopped; {left} sessions wait unfinished: continue with --resume {run_dir}")
        return 2
    evaluated = totals["done"] - totals["failed"] - totals["infra_ended"]
    if totals["total"] and evaluated == 0:
        say(
            f"beavertui: no session was evaluated: {totals['infra_ended']} ended by infrastructure failures "
            f"and {totals['failed']} failed to run (see {run_dir / 'infra.jsonl'})"
        )
        return 1
    return 0 if totals["failed"] == 0 else 1
