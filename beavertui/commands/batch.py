"""`beavertui batch`: run a protocol sweep over a corpus and several models, resumably, on every GPU."""

from __future__ import annotations

import argparse
import fnmatch
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "batch",
        help="run a protocol sweep over tasks and models (resumable; local GPUs or Ray)",
        description="Runs every (model, protocol, task, sample) session of a protocol file and writes "
        "sessions/<run_id>/<model>/<protocol>/<task>__s<sample>.jsonl plus run.json. Kill it at any time and "
        "continue with --resume RUN_DIR.",
    )
    p.add_argument(
        "--protocol", default="paper", help="protocol file, or a bundled one by name (default: paper)"
    )
    p.add_argument(
        "--corpus", type=Path, help="corpus root (default: the protocol file's, or the bundled corpus)"
    )
    p.add_argument("--tasks", help="glob of task ids, e.g. 'flashattn_*' (comma-separated globs allowed)")
    p.add_argument("--models", nargs="+", metavar="MODEL", help="models under test (replace the file's list)")
    p.add_argument("--samples", type=int, help="trajectories per (model, protocol, task)")
    p.add_argument("--gpus", help="GPU indices to use, e.g. 0,1 (default: every visible GPU)")
    p.add_argument("--jobs", type=int, help="sessions in flight at once (default: 4 per GPU + CPU cores)")
    p.add_argument(
        "--gpu-share", type=int, default=4, help="correctness runs sharing one GPU at once (default 4)"
    )
    p.add_argument("--toolchain", default="local", help="local (this machine's GPUs) or recorded:PATH")
    p.add_argument("--cache", type=Path, help="compile cache folder (default: ~/.cache/beavertui/builds)")
    p.add_argument("--no-cache", action="store_true", help="build every candidate, even identical ones")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue a run where it stopped")
    p.add_argument(
        "--sessions-dir", type=Path, default=Path("sessions"), help="where runs go (default ./sessions)"
    )
    p.add_argument("--run-id", help="name of the run folder (default: time, protocol name, pid)")
    p.add_argument(
        "--executor", choices=("local", "ray"), default="local", help="run sessions here or on Ray"
    )
    p.add_argument("--address", help="Ray cluster address (default: start a local Ray instance)")
    p.add_argument("--tui", action="store_true", help="live dashboard instead of the progress table")
    p.add_argument("--quiet", action="store_true", help="no progress display, only the final summary")
    p.set_defaults(func=_handle)


def _visible_gpus(spec: str | None) -> list[str]:
    if spec:
        return [g.strip() for g in spec.split(",") if g.strip()]
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, ln in enumerate(out.stdout.splitlines()) if ln.startswith("GPU ")]


def _select(task_ids: list[str], globs: str | None) -> list[str]:
    if not globs:
        return task_ids
    pats = [g.strip() for g in globs.split(",") if g.strip()]
    return [t for t in task_ids if any(fnmatch.fnmatchcase(t, p) for p in pats)]


def _models(specs: list[str]) -> list[Any]:
    from beavertui.batch.protocol_file import ModelSpec

    return [ModelSpec(model=s) for s in specs]


def new_manifest(args: argparse.Namespace) -> tuple[Any, Path, Any]:
    """Create the run directory and manifest from the protocol file and flags."""
    from beavertui import __version__
    from beavertui.batch.protocol_file import expand, find_protocol_file, load_batch_file, pairings_of
    from beavertui.batch.rundir import ProtocolEntry, RunManifest, host_info, new_run_id, write_manifest
    from beavertui.engine.corpus.load import default_corpus, load_corpus
    from beavertui.engine.errors import BeaverError

    pfile = find_protocol_file(args.protocol)
    spec = load_batch_file(pfile)
    protocols = expand(spec, str(pfile))
    _check_profiler(protocols, args.toolchain)
    models = _models(args.models) if args.models else list(spec.models)
    if not models:
        raise BeaverError(f"{pfile}: no models: list [[models]] in the file or pass --models")
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise BeaverError("two models share a name; give them distinct labels")
    corpus_path = args.corpus or (Path(spec.corpus) if spec.corpus else default_corpus())
    corpus = load_corpus(corpus_path)
    wanted = _select([t.id for t in corpus.tasks], args.tasks or spec.tasks)
    excluded = {p.split(":")[0].split("/")[0]: p for p in corpus.problems}
    tasks = []
    for t in corpus.tasks:
        if t.id not in wanted:
            continue
        if not t.runnable:
            excluded[t.id] = t.not_runnable_reason or "not runnable"
            continue
        tasks.append(t.id)
    if not tasks:
        raise BeaverError(f"{corpus_path}: no runnable task matches {args.tasks or spec.tasks or '*'}")
    run_id = args.run_id or new_run_id(spec.name)
    run_dir = args.sessions_dir / run_id
    if (run_dir / "run.json").exists():
        raise BeaverError(f"{run_dir}: already a run; continue it with --resume {run_dir}")
    manifest = RunManifest(
        run_id=run_id,
        name=spec.name,
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        command=shlex.join(["beavertui", *sys.argv[1:]]),
        tool_version=__version__,
        corpus=str(corpus.root.resolve()),
        tasks=tasks,
        excluded_tasks=excluded,
        samples=args.samples or spec.samples,
        protocols=[ProtocolEntry(slug=p.slug, protocol=p.protocol) for p in protocols],
        pairings=pairings_of(spec),
        models=models,
        retries=spec.retries,
        executor=args.executor,
        host=host_info(),
        toolchain=args.toolchain,
    )
    write_manifest(run_dir, manifest)
    return manifest, run_dir, corpus


def _handle(args: argparse.Namespace) -> int:
    """The batch, with a full disk or an unwritable folder said in one line (exit code 2)."""
    from beavertui.batch.rundir import MANIFEST, StorageError, storage_error

    try:
        return _start(args)
    except (OSError, StorageError) as exc:
        err = storage_error(exc) if isinstance(exc, OSError) else exc
        if err is None:
            raise
        run_dir = getattr(args, "run_dir", None)
        if run_dir is not None and (run_dir / MANIFEST).is_file():
            raise StorageError(
                f"{err}; every finished session is kept: make room (or the folder writable), then "
                f"continue with --resume {run_dir}"
            ) from None
        raise err from None


def _start(args: argparse.Namespace) -> int:
    from beavertui.batch.rundir import read_manifest, remove_partial_files, write_manifest
    from beavertui.batch.runner import run_batch
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.errors import BeaverError

    if args.tui:
        if not sys.stdout.isatty():
            raise BeaverError(
                "--tui needs a terminal (standard output is not one): drop --tui for progress lines"
            )
        if args.executor == "ray":
            raise BeaverError("--tui runs with the local executor; with Ray the progress table shows the run")
    if args.resume is not None:
        manifest = read_manifest(args.resume)
        run_dir = args.run_dir = args.resume
        remove_partial_files(run_dir)
        corpus = load_corpus(args.corpus or Path(manifest.corpus))
        manifest.resumed.append(time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        manifest.status = "running"
        write_manifest(run_dir, manifest)
        if args.toolchain == "local" and manifest.toolchain != "local":
            args.toolchain = manifest.toolchain
    else:
        manifest, run_dir, corpus = new_manifest(args)
        args.run_dir = run_dir
    tasks = {t.id: t for t in corpus.tasks}
    missing = [t for t in manifest.tasks if t not in tasks]
    if missing:
        raise BeaverError(f"{corpus.root}: tasks of the run are missing: {', '.join(missing[:5])}")
    print(f"beavertui: run {run_dir}", file=sys.stderr)
    if args.tui:
        from beavertui.tui.batch_dashboard import run_dashboard

        return run_dashboard(args, manifest, run_dir, tasks)
    return run_batch(args, manifest, run_dir, tasks)


def _check_profiler(protocols: list[Any], toolchain: str) -> None:
    """Refuse a batch with feedback level L4 where ncu cannot run (it would be L3 under another name)."""
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.host.gpu import gpu_signature
    from beavertui.engine.loop.run import wants_profile
    from beavertui.engine.timing.profile import profiler_unavailable

    if toolchain != "local" or not any(wants_profile(p.protocol) for p in protocols):
        return
    reason = profiler_unavailable(gpu_signature() is not None)
    if reason is not None:
        raise BeaverError(f"feedback L4 needs the ncu profiler, and {reason}; use L3 or a machine with ncu")
