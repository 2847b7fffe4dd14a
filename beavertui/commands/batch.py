"""`beavertui batch`: run a protocol sweep over a corpus and several models, resumably, on every GPU."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.commands.numbers import MAX_GPU_SHARE, MAX_JOBS, MAX_WALL_S, GpuList, float_in, int_in
from beavertui.engine.limits import MAX_SAMPLES

if TYPE_CHECKING:
    from beavertui.service.batch_prepare import BatchOptions


def register(sub: Any) -> None:
    p = sub.add_parser(
        "batch",
        help="run a protocol sweep over tasks and models (resumable; local GPUs or Ray)",
        description="Runs every (model, protocol, task, sample) session of a protocol file and writes "
        "sessions/<run_id>/<model>/<protocol>/<task>__s<sample>.jsonl plus run.json. Kill it at any time and "
        "continue with --resume RUN_DIR. Before anything is written it checks every endpoint model's key, "
        "that its endpoint answers and serves it, and the GPU, nvcc and compute-sanitizer (--dry-run too): a "
        "failed check is one line naming the fix, exit 2, no run folder. Exit 0 when every session was "
        "evaluated (whether the models repaired their tasks or not: see beavertui metrics).",
    )
    p.add_argument(
        "--protocol",
        default=None,
        help="protocol file, or a bundled one by name (default: paper; with --resume: the run's, and given "
        "again it must describe the run's protocols and models, whose credentials run.json does not keep)",
    )
    p.add_argument(
        "--corpus", type=Path, help="corpus root (default: the protocol file's, or the bundled corpus)"
    )
    p.add_argument("--tasks", help="glob of task ids, e.g. 'flashattn_*' (comma-separated globs allowed)")
    p.add_argument(
        "--models",
        nargs="+",
        metavar="MODEL",
        help="names of the models under test, replacing the file's [[models]] list: endpoint model names "
        "(or models-file entries), scripted:FILE, scripted:@reference",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="run the bundled demo sessions' tasks with their hand-written replies on their recorded H200 "
        "outcomes: a whole batch with no GPU and no key (the same as --models scripted:@demo --toolchain "
        "demo --tasks <the demo tasks>)",
    )
    p.add_argument("--samples", type=int_in(1, MAX_SAMPLES), help="trajectories per (model, protocol, task)")
    p.add_argument("--gpus", type=GpuList(), help="GPU indices to use, e.g. 0,1 (default: every visible GPU)")
    p.add_argument(
        "--jobs",
        type=int_in(1, MAX_JOBS),
        help="most sessions in flight at once (default: 32 per GPU; a new one starts only while the GPUs "
        "and build slots can take its work)",
    )
    p.add_argument(
        "--gpu-share",
        type=int_in(1, MAX_GPU_SHARE),
        default=None,
        help="correctness runs sharing one GPU at once (default 4)",
    )
    p.add_argument(
        "--pause-for-timing",
        choices=("runs", "all", "none"),
        default=None,
        help="which runs on its GPU a timing stage stops (SIGSTOP, not counted in their time) and continues "
        "after it, instead of waiting for them to end: runs (default): correctness runs, while sanitizer and "
        "profiler runs are waited for; all: those too (a sanitizer run stopped as it starts was seen never to "
        "go on); none: it waits for every run",
    )
    p.add_argument(
        "--no-pause-for-timing",
        action="store_true",
        help="the same as --pause-for-timing none",
    )
    p.add_argument(
        "--builds-in-timing",
        choices=("go", "stop", "auto"),
        default=None,
        help="what the other sessions' builds do while a GPU is held alone for timing: go on (default; "
        "they leave the measured times as they are, and lengthen the stage), stop (SIGSTOP, not counted "
        "in their time) until the measurement ends, or auto: stop on a machine with one GPU, go on with more",
    )
    p.add_argument(
        "--inline-timing",
        action="store_true",
        help="time each correct attempt inside its session, which waits for it (the design before the timing "
        "lane); by default, under a gate applied after the run, a session ends when its loop ends and a "
        "timing lane times its correct attempts beside the sessions, appending them to its file",
    )
    p.add_argument(
        "--toolchain",
        default="local",
        help="local (this machine's GPUs), demo (the bundled demo sessions' recorded outcomes) or recorded:PATH",
    )
    p.add_argument("--cache", type=Path, help="compile cache folder (default: ~/.cache/beavertui/builds)")
    p.add_argument("--no-cache", action="store_true", help="build every candidate, even identical ones")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run where it stopped")
    p.add_argument(
        "--retry-infra",
        action="store_true",
        help="with --resume: run again the sessions that ended by an infrastructure failure (endpoint, GPU, "
        "toolchain) after their retries, each with the run's retries anew, once the cause is fixed",
    )
    p.add_argument(
        "--sessions-dir", type=Path, default=Path("sessions"), help="where runs go (default ./sessions)"
    )
    p.add_argument("--run-id", help="name of the run folder (default: time, protocol name, pid)")
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="run sessions here, or on a Ray cluster's workers: one session holds one GPU alone and times its "
        "correct attempts inside its loop; this machine writes every session file (README: A batch on Ray)",
    )
    p.add_argument(
        "--address",
        help="the Ray cluster's HOST:PORT, as `ray start --head` printed it (default: RAY_ADDRESS, else a cluster "
        "`ray start` made on this machine, else a local Ray instance started for the batch)",
    )
    p.add_argument(
        "--all-tasks", action="store_true",
        help="also run tasks whose validation on this GPU found them unusable (default: usable tasks only)",
    )  # fmt: skip
    p.add_argument(
        "--reply-cache", type=Path, metavar="DIR",
        help="reuse model replies stored here for the exact same request (default: ~/.cache/beavertui/replies)",
    )  # fmt: skip
    p.add_argument("--no-reply-cache", action="store_true", help="ask the endpoint for every reply")
    p.add_argument(
        "--reply-cache-sampled", action="store_true",
        help="reuse replies sampled at temperature > 0 too (off by default: a stored reply is no fresh sample)",
    )  # fmt: skip
    p.add_argument(
        "--few-shot-pool", nargs="+", metavar="DIR", default=None,
        help="harness run folders the few-shot protocols draw their examples from, in place of the "
        "protocol file's (paper-fewshot names the release's, which the public release does not ship)",
    )  # fmt: skip
    p.add_argument(
        "--few-shot-curated", metavar="FILE", default=None,
        help="the curated few-shot protocols' map of task to example tasks, in place of the protocol file's",
    )  # fmt: skip
    p.add_argument(
        "--dry-run", action="store_true",
        help="list the tasks, models, protocols, sessions and GPUs that would run, and write nothing",
    )  # fmt: skip
    from beavertui.commands.endpoint import add_endpoint_options
    from beavertui.commands.formats import add_format_argument

    add_endpoint_options(p)
    add_format_argument(p, "the summary table's rows")
    p.add_argument("--tui", action="store_true", help="live dashboard instead of the progress table")
    p.add_argument("--quiet", action="store_true", help="no progress display, only the final summary")
    p.add_argument(
        "--start-until",
        type=float_in(0, MAX_WALL_S, unit="seconds"),
        metavar="SECONDS",
        help="start no new session after this many seconds; the sessions in flight finish and the rest wait "
        "for --resume (exit status 130). Set it a session's length before a machine's time limit, so that the limit "
        "cuts no work",
    )
    p.set_defaults(func=_handle)


def options_of(args: argparse.Namespace) -> BatchOptions:
    """The batch options given by the flags."""
    from beavertui.commands.endpoint import endpoint_overrides, models_file_of
    from beavertui.engine import bundled
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.models.resolve import DEMO_MODEL
    from beavertui.service.batch_prepare import BatchOptions

    models, toolchain, tasks = args.models, args.toolchain, args.tasks
    if args.retry_infra and args.resume is None:
        raise BeaverError("--retry-infra goes with --resume RUN_DIR: a new run has no session to run again")
    conflicts = (
        (args.no_cache and args.cache is not None, "--no-cache and --cache ask for no compile cache and one"),
        (args.no_reply_cache and args.reply_cache is not None, "--no-reply-cache and --reply-cache ask for no reply cache and one"),
        (args.no_reply_cache and args.reply_cache_sampled, "--no-reply-cache and --reply-cache-sampled ask for no reply cache and one"),
    )  # fmt: skip
    for given, what in conflicts:
        if given:
            raise BeaverError(f"{what}: give one of them")
    if args.no_pause_for_timing and args.pause_for_timing not in (None, "none"):
        raise BeaverError(
            f"--pause-for-timing {args.pause_for_timing} and --no-pause-for-timing ask for runs stopped for a "
            "timing stage and none: give one of them"
        )
    if args.address is not None and args.executor != "ray":
        raise BeaverError("--address names a Ray cluster: add --executor ray, or drop --address")
    if args.executor == "ray":
        if args.start_until is not None:
            raise BeaverError(
                "--start-until works with the local executor; Ray schedules its sessions itself"
            )
        here = (
            ("--gpus", args.gpus is not None),
            ("--gpu-share", args.gpu_share is not None),
            ("--pause-for-timing", args.pause_for_timing is not None),
            ("--no-pause-for-timing", args.no_pause_for_timing),
            ("--builds-in-timing", args.builds_in_timing is not None),
        )
        for flag, given in here:
            if given:
                raise BeaverError(
                    f"{flag} sets this machine's GPU pool, which the Ray executor does not use (each session "
                    f"holds one GPU of a worker alone): drop {flag}, or run with --executor local"
                )
    if getattr(args, "demo", False):
        if models and models != [DEMO_MODEL]:
            raise BeaverError("--demo runs the demo's scripted replies: drop --models")
        models = [DEMO_MODEL]
        toolchain = "demo" if toolchain == "local" else toolchain
        tasks = tasks or ",".join(bundled.demo_tasks())
    return BatchOptions(
        protocol=args.protocol,
        corpus=args.corpus,
        tasks=tasks,
        models=models,
        samples=args.samples,
        gpus=args.gpus,
        jobs=args.jobs,
        gpu_share=args.gpu_share or 4,
        pause_for_timing="none" if args.no_pause_for_timing else args.pause_for_timing or "runs",
        builds_in_timing=args.builds_in_timing or "go",
        timing_lane=not args.inline_timing,
        toolchain=toolchain,
        cache=args.cache,
        no_cache=args.no_cache,
        resume=args.resume,
        sessions_dir=args.sessions_dir,
        run_id=args.run_id,
        executor=args.executor,
        address=args.address,
        all_tasks=args.all_tasks,
        reply_cache=args.reply_cache,
        no_reply_cache=args.no_reply_cache,
        reply_cache_sampled=args.reply_cache_sampled,
        retry_infra=args.retry_infra,
        dry_run=args.dry_run,
        few_shot_pool=tuple(args.few_shot_pool) if args.few_shot_pool else None,
        few_shot_curated=args.few_shot_curated,
        start_until_s=args.start_until,
        command=["beavertui", *sys.argv[1:]],
        endpoint=endpoint_overrides(args),
        models_file=models_file_of(args),
    )


def _handle(args: argparse.Namespace) -> int:
    """The batch, with a full disk or an unwritable folder said in one line (exit code 2)."""
    from beavertui.batch.rundir import MANIFEST, StorageError, storage_error

    seen: list[Path] = []
    try:
        return _start(args, seen.append)
    except (OSError, StorageError) as exc:
        err = storage_error(exc) if isinstance(exc, OSError) else exc
        if err is None:
            raise
        if seen and (seen[0] / MANIFEST).is_file():
            raise StorageError(
                f"{err}; every finished session is kept: make room (or the folder writable), then "
                f"continue with --resume {seen[0]}"
            ) from None
        raise err from None


def _start(args: argparse.Namespace, started: Callable[[Path], None]) -> int:
    from beavertui.commands.batch_progress import display_of
    from beavertui.commands.formats import output_format
    from beavertui.engine.errors import BeaverError
    from beavertui.service.batch import run_batch
    from beavertui.service.batch_prepare import prepare

    output_format(args)  # --json with another --format is refused before anything runs
    options, tui = options_of(args), args.tui
    if tui:
        if not sys.stdout.isatty():
            raise BeaverError(
                "--tui needs a terminal (standard output is not one): drop --tui for progress lines"
            )
        if options.executor == "ray":
            raise BeaverError("--tui runs with the local executor; with Ray the progress table shows the run")
    run = prepare(options, started)
    if options.dry_run:
        from beavertui.commands.batch_overview import show_plan

        return show_plan(run.manifest, run.run_dir, args, resuming=options.resume is not None)
    print(f"beavertui: run {run.run_dir}", file=sys.stderr)
    if tui:
        from beavertui.tui.batch_dashboard import run_dashboard

        rc = run_dashboard(options, run)
    else:
        rc = run_batch(options, run, display=display_of(args.quiet))
    from beavertui.commands.batch_overview import show_summary

    show_summary(run.manifest, run.run_dir, args, run.replies)
    return rc
