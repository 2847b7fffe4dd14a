"""`beavertui corpus list|validate|baselines|minimize`: what tasks a corpus holds, which of them are valid on
this GPU, their named baselines (PyTorch eager, torch.compile, CUDA Graph, vendor library, roofline), and the
minimal fixes of their broken starts."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from beavertui.commands.numbers import (
    MAX_CALLS,
    MAX_TRIALS,
    MAX_WALL_S,
    MAX_WORKERS,
    GpuList,
    GpuSlug,
    float_in,
    int_in,
)
from beavertui.engine.errors import BeaverError
from beavertui.engine.limits import MAX_GATE, MAX_TIMEOUT_S


def register(sub: Any) -> None:
    p = sub.add_parser("corpus", help="list or validate a task corpus")
    csub = p.add_subparsers(dest="corpus_command", metavar="ACTION", required=True)
    ls = csub.add_parser("list", help="list the tasks of a corpus and whether each can run here")
    ls.add_argument(
        "--corpus", type=Path, default=None, help="corpus folder (native corpus/ or release data/)"
    )
    from beavertui.commands.formats import add_format_argument

    add_format_argument(ls, "one object per task and line")
    ls.set_defaults(func=_list)
    va = csub.add_parser("validate", help="check references pass, broken starts fail, and time references")
    va.add_argument("--corpus", type=Path, default=None, help="corpus folder")
    va.add_argument(
        "--task", action="append", default=None, metavar="ID",
        help="only this task (repeatable; the tasks are checked in the order named)",
    )  # fmt: skip
    add_format_argument(va, "one object per task and line, as each is checked")
    va.add_argument("--no-timing", action="store_true", help="skip reference timing")
    va.add_argument(
        "--reuse-checks", action="store_true",
        help="tasks stored as checked but not timed on this GPU (an earlier --no-timing run) keep their broken "
        "start's result: only the reference is run and timed (not timed again where an earlier run stored its time on "
        "this GPU signature, for it or for a task with the same reference, harness and timing configuration)",
    )  # fmt: skip
    va.add_argument(
        "--workers", type=int_in(1, MAX_WORKERS), default=None, metavar="N",
        help="tasks built and run at once in the check phase (default: min(8, CPU cores)); timing is always serial",
    )  # fmt: skip
    va.add_argument(
        "--gpu-jobs", type=int_in(1, MAX_WORKERS), default=None, metavar="N",
        help="of those, at most N test or sanitizer runs on the GPU at once while the others build (default: "
        "no limit below --workers; for checks whose runs need much GPU memory and whose builds are long)",
    )  # fmt: skip
    va.add_argument(
        "--gpus", type=GpuList(), default=None, metavar="LIST",
        help="time on these GPUs, one task at a time on each (e.g. 0,1; default: the visible GPU as one)",
    )  # fmt: skip
    va.set_defaults(func=_validate)
    bl = csub.add_parser(
        "baselines",
        help="time every task's named baselines on this GPU (PyTorch eager, torch.compile, CUDA Graph, vendor), "
        "or print the table of the stored ones (--table)",
    )
    bl.add_argument("--corpus", type=Path, default=None, help="corpus folder")
    bl.add_argument("--task", action="append", default=None, metavar="ID", help="only this task (repeatable)")
    bl.add_argument(
        "--tasks-file", type=Path, default=None, metavar="FILE",
        help="only the task ids listed in FILE, one a line (# comments)",
    )  # fmt: skip
    bl.add_argument(
        "--table", action="store_true",
        help="measure nothing: print the stored times of every task beside its reference's",
    )  # fmt: skip
    bl.add_argument(
        "--load", type=Path, default=None, metavar="FILE",
        help="measure nothing: store the sets of FILE (an --out file recorded on another machine) for the "
        "corpus's tasks it names",
    )  # fmt: skip
    bl.add_argument(
        "--gpu-slug", default=None, metavar="SLUG", type=GpuSlug(),
        help="with --table: the GPU signature whose stored times to show (default: this machine's GPU)",
    )  # fmt: skip
    bl.add_argument(
        "--missing", action="store_true",
        help="only the tasks without named baselines stored for this GPU (a run cut by its budget goes on)",
    )  # fmt: skip
    bl.add_argument(
        "--jobs",
        type=int_in(1, MAX_WORKERS),
        default=4,
        metavar="N",
        help="drivers started at once (default 4); those whose estimated GPU memory fits together warm up "
        "side by side, the others wait for room",
    )
    bl.add_argument(
        "--trials",
        type=int_in(1, MAX_TRIALS),
        default=20,
        metavar="N",
        help="timed calls per variant (default 20)",
    )
    bl.add_argument(
        "--warmup",
        type=int_in(0, MAX_TRIALS),
        default=3,
        metavar="N",
        help="untimed calls per variant (default 3)",
    )
    bl.add_argument(
        "--warm-s", type=float_in(0, MAX_TIMEOUT_S, above=True, unit="seconds"), default=600.0, metavar="S",
        help="a driver not ready (compiled and warmed up) after S seconds is stopped and says so (default 600)",
    )  # fmt: skip
    bl.add_argument(
        "--budget-s", type=float_in(0, MAX_WALL_S, unit="seconds"), default=None, metavar="S",
        help="start no driver after S seconds (the tasks not reached say so)",
    )  # fmt: skip
    bl.add_argument(
        "--out", type=Path, default=None, metavar="FILE",
        help="also write every stored set to FILE, one JSON object a line (for committing elsewhere)",
    )  # fmt: skip
    add_format_argument(bl, "one object per task")
    bl.set_defaults(func=_baselines)
    mi = csub.add_parser(
        "minimize",
        help="search each task's minimal fix: the fewest of its reference's changed lines that pass its test at the gate",
    )
    mi.add_argument("--corpus", type=Path, default=None, help="corpus folder (the release's data/)")
    mi.add_argument(
        "--tasks", action="append", default=None, metavar="PATTERN",
        help="task ids or patterns, comma-separated, or @FILE with one a line (repeatable; default: every task "
        "with a drop-in reference)",
    )  # fmt: skip
    mi.add_argument(
        "--oracle", choices=("judge", "compile"), default="judge",
        help="judge: build, run and time on the GPU, pass at the gate (verified fixes); compile: the build alone, "
        "no GPU (what it finds is stored apart, never verified)",
    )  # fmt: skip
    mi.add_argument(
        "--gate", type=float_in(0, MAX_GATE, above=True), default=0.7,
        help="speedup gate p a fix must keep (default 0.7)",
    )  # fmt: skip
    mi.add_argument(
        "--gpu", type=GpuList(single=True), default=None, metavar="N", help="run every GPU stage on device N"
    )
    mi.add_argument(
        "--max-calls", type=int_in(1, MAX_CALLS), default=300, metavar="N",
        help="fresh oracle calls a task may make in this run (kept answers are free; default 300)",
    )  # fmt: skip
    mi.add_argument(
        "--budget-s", type=float_in(0, MAX_WALL_S, unit="seconds"), default=None, metavar="S",
        help="start no oracle call after S seconds; run the command again to go on",
    )  # fmt: skip
    mi.add_argument(
        "--workers",
        type=int_in(1, MAX_WORKERS),
        default=4,
        metavar="N",
        help="tasks searched at once (default 4)",
    )
    mi.add_argument(
        "--gpu-jobs", type=int_in(1, MAX_WORKERS), default=1, metavar="N",
        help="correctness runs on the GPU at once (default 1); a timing always waits for them and holds it alone",
    )  # fmt: skip
    mi.add_argument(
        "--store", type=Path, default=None, metavar="DIR",
        help="where fixes and kept answers go (default: ~/.cache/beavertui/minimal_fixes; scoring reads it)",
    )  # fmt: skip
    mi.add_argument(
        "--hunks-only", action="store_true",
        help="ask the oracle nothing past each search's hunk phase: every task gets a fix 1-minimal over hunks "
        "first (the line phase goes only as far as the kept answers take it); run again without it to go on",
    )  # fmt: skip
    mi.add_argument(
        "--time-every-candidate", action="store_true",
        help="judge: time every correct candidate (default: search for correctness and time what the search "
        "ends with, searching again at the gate only when that is too slow)",
    )  # fmt: skip
    mi.add_argument(
        "--replay", default=None, metavar="SLUG", type=GpuSlug(),
        help="judge: search again over the answers a GPU with this signature kept in the store, asking no "
        "oracle and needing no GPU; rewrites the store's record as the searches stand (e.g. a store brought "
        "back from a GPU machine)",
    )  # fmt: skip
    mi.add_argument(
        "--missing", action="store_true",
        help="leave out the tasks a store already holds a verified fix for, whichever GPU verified it (this "
        "machine's, the package's and --store's)",
    )  # fmt: skip
    mi.add_argument("--json", action="store_true", help="one JSON object per task on standard output")
    mi.add_argument(
        "--dry-run", action="store_true",
        help="list the tasks it would search with the size of each reference diff; run no oracle, write nothing",
    )  # fmt: skip
    mi.set_defaults(func=_minimize)


def _load(args: argparse.Namespace) -> Any:
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.service.environment import default_corpus

    return load_corpus(args.corpus or default_corpus(), getattr(args, "task", None))


def _list(args: argparse.Namespace) -> int:
    from beavertui.engine.corpus.load import runnable_here
    from beavertui.engine.host.gpu import probe

    load = _load(args)
    machine = probe()
    rows = []
    for t in load.tasks:
        why = runnable_here(t, machine)
        rows.append(
            {
                "id": t.id,
                "family": t.family,
                "label": t.label,
                "category": t.display_label,
                "layout": t.layout,
                "solution_file": t.solution_file,
                "runnable": why is None,
                "reason": why,
            }
        )
    from beavertui.commands.formats import output_format
    from beavertui.reports.cells import Table
    from beavertui.reports.render import emit

    fmt = output_format(args)
    if fmt == "json":
        for r in rows:
            print(json.dumps(r))
        for p in load.problems:
            print(json.dumps({"error": p}))
        return 0
    # why a task cannot run here is said once in the note, each reason numbered, not in every row; a CSV
    # file has no note, so there each row says why in a column of its own
    reasons = list(dict.fromkeys(str(r["reason"]) for r in rows if not r["runnable"]))
    table = []
    for r in rows:
        label = r["label"] if r["label"] == r["category"] else f"{r['label']} ({r['category']})"
        runs: tuple[str, ...]
        if fmt == "csv":
            runs = ("yes", "") if r["runnable"] else ("no", str(r["reason"]))
        else:
            runs = ("yes" if r["runnable"] else f"no ({reasons.index(str(r['reason'])) + 1})",)
        table.append((r["id"], r["family"], label, r["solution_file"], *runs))
    title = f"{load.root}: {len(rows)} tasks, {sum(r['runnable'] for r in rows)} runnable here"
    cols = ("id", "family", "label", "solution file", "runs here", *(("why not",) if fmt == "csv" else ()))
    note = "; ".join(f"({n}) {why}" for n, why in enumerate(reasons, 1))
    emit([Table(title, cols, tuple(table), note=note, keys=1)], fmt)
    for p in load.problems:
        print(f"malformed: {p}", file=sys.stderr)
    if not rows and not load.problems:
        print(f"no tasks in {load.root}", file=sys.stderr)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from beavertui.commands.formats import output_format
    from beavertui.engine.corpus.families import dependency_lines
    from beavertui.engine.host.ceilings import measure
    from beavertui.engine.host.gpu import probe
    from beavertui.engine.timing import baselines
    from beavertui.engine.validation.validate import validate
    from beavertui.reports.render import emit
    from beavertui.reports.validation import validation_table
    from beavertui.service.environment import local_config

    fmt = output_format(args)
    load = _load(args)
    machine = probe()
    ceilings = None
    if machine.gpu is not None and not args.no_timing:
        print(
            "measuring this GPU's copy bandwidth and bf16 rate (cached per GPU signature) ...",
            file=sys.stderr,
        )
        ceilings = measure(machine.gpu, torch_ok=machine.torch)
        print(
            f"ceilings on {machine.gpu.slug}: copy {ceilings.copy_gbps or '?'} GB/s, "
            f"bf16 {ceilings.bf16_tflops or '?'} TFLOP/s"
            + (f" ({'; '.join(ceilings.notes)})" if ceilings.notes else ""),
            file=sys.stderr,
        )
    results = []
    tasks = list(load.tasks)
    if args.task:  # in the order named (a script puts the cheap checks first)
        order = {t: i for i, t in enumerate(args.task)}
        tasks.sort(key=lambda t: order.get(t.id, len(order)))
    for line in dependency_lines(tasks):
        print(f"beavertui: {line}", file=sys.stderr)

    def checked(r: Any, done: int, total: int) -> None:
        seen = r.broken_category or r.reason or ""
        print(
            f"checked [{done}/{total}] {r.task_id}: reference {r.reference_category or '-'}, broken start {seen}",
            file=sys.stderr, flush=True,
        )  # fmt: skip

    gpus = [g.strip() for g in args.gpus.split(",") if g.strip()] if args.gpus else None
    run = validate(
        tasks, machine, timing=not args.no_timing, ceilings=ceilings, workers=args.workers, on_checked=checked,
        gpus=gpus, reuse_checks=args.reuse_checks, gpu_jobs=args.gpu_jobs, config=local_config(),
    )  # fmt: skip
    for i, r in enumerate(run, 1):
        results.append(r)
        kind, reason = r.judge()
        state = f"{kind.replace('_', ' ')}: {reason}"
        if r.reference_ms is not None:
            state += f" (reference {r.reference_ms:.4f} ms {r.method}, CV {100 * (r.reference_cv or 0):.1f}%)"
            if r.reference_measured_for:
                state += f"; {baselines.shared_note(r.reference_measured_for)}"
        print(f"[{i}/{len(tasks)}] {r.task_id}: {state}", file=sys.stderr, flush=True)
        if fmt == "json":
            doc = {**asdict(r), "valid": r.valid, "verdict": kind, "verdict_reason": reason}
            print(json.dumps({**doc, "observed_category": r.observed_category}), flush=True)
    if fmt == "json":
        for p in load.problems:
            print(json.dumps({"error": p}))
        return _validate_status(results, load.problems)
    where = machine.gpu.slug if machine.gpu else "this machine (no GPU)"
    emit([validation_table(results, where)], fmt)
    for p in load.problems:
        print(f"malformed: {p}", file=sys.stderr)
    return _validate_status(results, load.problems)


def _minimize(args: argparse.Namespace) -> int:
    from beavertui.engine.host.gpu import gpu_signature
    from beavertui.service.environment import default_corpus
    from beavertui.service.minimize import MinimizeOptions, plan, run

    pats = tuple(_patterns(args.tasks or ()))
    options = MinimizeOptions(
        corpus=args.corpus or default_corpus(), tasks=pats, oracle=args.oracle, gate=args.gate,
        max_calls=args.max_calls, budget_s=args.budget_s, workers=args.workers, gpu=args.gpu, store=args.store,
        gpu_jobs=args.gpu_jobs, hunks_only=args.hunks_only, screen=not args.time_every_candidate,
        replay=args.replay is not None, missing=args.missing,
    )  # fmt: skip
    if args.replay is not None and args.oracle != "judge":
        raise BeaverError("--replay replays a judge search's kept answers: it takes no --oracle compile")
    _minimize_options(args)
    if args.replay is not None:
        slug: str | None = args.replay
    else:
        gpu = gpu_signature() if args.oracle == "judge" else None
        slug = gpu.slug if gpu is not None else None
    the_plan = plan(options, slug)
    for task_id, why in sorted(the_plan.skipped.items()):
        print(f"skipped {task_id}: {why}", file=sys.stderr)
    if args.dry_run:
        return _minimize_plan(the_plan)
    if args.replay is None and the_plan.tasks and shutil.which("nvcc") is None:
        # every oracle builds each candidate: without nvcc each answer would be "command not found", kept in
        # the store as the task's own answer (the reference "fails here") and taken again by every later run
        raise BeaverError(
            "nvcc is not on PATH: install the CUDA toolkit (or add its bin/ to PATH); every oracle builds each "
            "candidate with it"
        )
    how = "replaying the kept answers of" if args.replay is not None else "searching"
    print(
        f"{how} {len(the_plan.tasks)} task(s) with the {args.oracle} oracle, into {the_plan.store / str(the_plan.gpu)}",
        file=sys.stderr, flush=True,
    )  # fmt: skip

    def started(task: Any, i: int, total: int) -> None:
        print(f"start [{i}/{total}] {task.id}", file=sys.stderr, flush=True)

    def done(outcome: Any, i: int, total: int) -> None:
        if isinstance(outcome, str):
            print(f"[{i}/{total}] failed: {outcome}", file=sys.stderr, flush=True)
            return
        size = "none" if outcome.lines is None else f"{outcome.lines}/{outcome.reference_lines} lines"
        print(
            f"[{i}/{total}] {outcome.task_id}: {outcome.status}{' (verified)' if outcome.verified else ''}, {size}, "
            f"{outcome.calls} oracle calls ({outcome.asked} asked): {outcome.why}",
            file=sys.stderr, flush=True,
        )  # fmt: skip
        if args.json:
            doc = outcome.report()
            print(json.dumps(doc), flush=True)

    summary = run(options, the_plan, started, done)
    print(summary.line(), file=sys.stderr)
    return 0 if not summary.errors else 3  # a task's search that failed gave no verdict: infrastructure


def _minimize_options(args: argparse.Namespace) -> None:
    """Refuse an option the search would ignore: the GPU's options with the compile-only oracle (it builds
    only) or a replay (it asks no oracle), timing every candidate with the compile-only oracle, and a call
    budget for a replay (it makes no call)."""
    gpu_options = {"--gpu": args.gpu is not None, "--gpu-jobs": args.gpu_jobs != 1}
    if args.oracle == "compile":
        given = [
            f
            for f, set_ in {**gpu_options, "--time-every-candidate": args.time_every_candidate}.items()
            if set_
        ]
        why = "--oracle compile builds only, on no GPU"
    elif args.replay is not None:
        given = [f for f, set_ in {**gpu_options, "--max-calls": args.max_calls != 300}.items() if set_]
        why = "--replay asks no oracle and needs no GPU"
    else:
        return
    if given:
        raise BeaverError(
            f"{why}: {', '.join(given)} would be ignored; drop {'it' if len(given) == 1 else 'them'}"
        )


def _minimize_plan(the_plan: Any) -> int:
    """The tasks a minimize run would search, each with its reference diff's size, and the medians."""
    import statistics

    from beavertui.engine.corpus.minimal_search import diff

    sizes = []
    for t in the_plan.tasks:
        broken = t.broken_start()
        d = diff(broken, t.reference() or "")
        kept = len(broken.splitlines()) - sum(1 for u in d.units if u.kind == "-")
        sizes.append((len(d.units), len(d.hunks), len(broken.splitlines()), kept))
        print(
            f"{t.id}: {len(d.units)} lines in {len(d.hunks)} hunks; broken start {sizes[-1][2]} lines, {kept} kept"
        )
    if sizes:
        med = [statistics.median(col) for col in zip(*sizes, strict=True)]
        print(
            f"{len(sizes)} task(s) to search; median reference diff {med[0]:g} lines in {med[1]:g} hunks, "
            f"median broken start {med[2]:g} lines of which {med[3]:g} the reference keeps"
        )
    else:
        print("0 task(s) to search")
    return 0


#: The largest task list file (``--tasks @FILE``, ``--tasks-file``) read.
MAX_TASK_LIST_BYTES = 1 << 20


def _task_list(path: str | Path, what: str) -> list[str]:
    """The task ids of a list file, one a line (``#`` starts a comment), read as a regular UTF-8 file of at
    most 1 MiB (a FIFO or /dev/zero would hang); a list that names no task is refused, never read as every
    task."""
    from beavertui.engine.fileio import read_small_text

    try:
        text = read_small_text(path, MAX_TASK_LIST_BYTES, "task list")
    except OSError as exc:
        raise BeaverError(f"{what}: cannot read ({exc.strerror or exc})") from None
    ids = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    ids = [i for i in ids if i]
    if not ids:
        raise BeaverError(f"{what}: lists no task id (one a line, # starts a comment)")
    return ids


def _patterns(args: Any) -> list[str]:
    """Task ids and patterns, comma-separated; ``@FILE`` reads one a line (``#`` starts a comment). Given,
    they must name at least one task: an empty --tasks is refused, not read as every task."""
    out = []
    for arg in args:
        for item in (p.strip() for p in arg.split(",")):
            if item.startswith("@"):
                out += _task_list(item[1:], f"--tasks {item}")
            elif item:
                out.append(item)
    if args and not out:
        raise BeaverError("--tasks names no task: give task ids or patterns, or leave it out for every task")
    return out


def _validate_status(results: list[Any], problems: tuple[str, ...] | list[str]) -> int:
    """0 only when the corpus is what was asked for: no malformed task, no invalid one, at least one valid
    (a task that is not runnable as shipped is reported, not counted against the corpus)."""
    valid = sum(r.valid for r in results)
    invalid = sum(1 for r in results if r.runnable and not r.valid)
    if problems or invalid or not valid:
        print(
            f"beavertui: corpus validate: {valid} valid, {invalid} invalid, {len(problems)} malformed",
            file=sys.stderr,
        )
        return 1
    return 0


def _baselines_tasks(args: argparse.Namespace) -> list[Any]:

    load = _load(args)
    tasks = list(load.tasks)
    unknown = [tid for tid in args.task or () if tid not in {t.id for t in tasks}]
    if unknown:  # a task named that is not there is bad input, not an empty table
        why = next(
            (p for p in load.problems if p.startswith(f"{unknown[0]}:")), f"{unknown[0]}: not in the corpus"
        )
        raise BeaverError(f"--task {why}")
    if args.tasks_file is not None:
        keep = set(_task_list(args.tasks_file, str(args.tasks_file)))
        missing = sorted(keep - {t.id for t in tasks})
        if missing:
            raise BeaverError(f"{args.tasks_file}: not in the corpus: {', '.join(missing[:5])}")
        tasks = [t for t in tasks if t.id in keep]
    return tasks


def _baselines_options(args: argparse.Namespace) -> None:
    """Refuse an option the mode asked for would ignore: the recording options with --table or --load (they
    measure nothing), --gpu-slug without --table (a recording times this machine's GPU)."""
    if args.table and args.load is not None:
        raise BeaverError("--table prints the stored sets and --load stores a file's: give one of them")
    mode = "--table" if args.table else "--load" if args.load is not None else None
    if mode is not None:
        recording = {
            "--jobs": args.jobs != 4, "--trials": args.trials != 20, "--warmup": args.warmup != 3,
            "--warm-s": args.warm_s != 600.0, "--budget-s": args.budget_s is not None, "--missing": args.missing,
            "--out": args.out is not None,
        }  # fmt: skip
        given = [flag for flag, set_ in recording.items() if set_]
        if given:
            raise BeaverError(
                f"{mode} measures nothing: {', '.join(given)} would be ignored; drop {'it' if len(given) == 1 else 'them'}"
            )
    elif args.gpu_slug is not None:
        raise BeaverError(
            "--gpu-slug names the GPU whose stored times --table prints; a recording times this machine's GPU: "
            "drop it, or add --table"
        )


def _baselines(args: argparse.Namespace) -> int:
    from beavertui.commands.formats import output_format
    from beavertui.engine.host.ceilings import measure
    from beavertui.engine.host.gpu import memory_total_bytes, probe
    from beavertui.engine.session.events import GpuSignature
    from beavertui.engine.validation import baselines_record as rec
    from beavertui.reports.cells import Table
    from beavertui.reports.render import emit

    fmt = output_format(args)
    _baselines_options(args)
    tasks = _baselines_tasks(args)
    if args.load is not None:
        loaded = rec.load_sets(tasks, args.load)
        elsewhere = [o.task_id for o in loaded if o.reason == rec.NOT_IN_CORPUS]
        for o in loaded:
            if o.reason and o.reason != rec.NOT_IN_CORPUS:
                print(f"{o.task_id}: {o.reason}", file=sys.stderr)
        n_stored = sum(1 for o in loaded if o.stored)
        other = (
            f" ({len(elsewhere)} set(s) of tasks not in this corpus left out: {', '.join(elsewhere[:3])}"
            f"{', ...' if len(elsewhere) > 3 else ''})"
            if elsewhere
            else ""
        )
        if not n_stored:  # the file was not for these tasks, or is out of date: bad input, nothing written
            why = (
                "no set of it could be stored"
                if len(elsewhere) < len(loaded)
                else "no set of it names a task here"
            )
            raise BeaverError(f"{args.load}: {why}{other}" if loaded else f"{args.load}: it holds no set")
        print(f"stored the named baselines of {n_stored} task(s) from {args.load}{other}", file=sys.stderr)
        return 0
    if args.table:
        slugs = sorted(
            {f.stem for t in tasks for f in (t.root / "baselines" / "named").glob("*.json")}
            | {f.stem for t in tasks for f in rec.stored_elsewhere(t)}
        )
        have = f" (sets are stored for {', '.join(slugs)})" if slugs else " (no set is stored for any)"
        if args.gpu_slug:
            gpu = GpuSignature(slug=args.gpu_slug, name=args.gpu_slug, compute_capability="")
            rows = rec.table_rows(tasks, gpu)
            if all(
                cell == "-" for row in rows for cell in row[1:]
            ):  # a mistyped signature: a table of nothing
                raise BeaverError(f"--gpu-slug {args.gpu_slug}: no time is stored for it{have}")
        else:
            found = probe().gpu
            if found is None:
                raise BeaverError(
                    f"no GPU here: name the GPU signature whose times to show with --gpu-slug{have}"
                )
            gpu = found
        full = rec.fully_timed(tasks, gpu)
        title = (
            f"named baselines on {gpu.slug}: {len(tasks)} tasks, {full} with eager, torch.compile (both modes) "
            "and CUDA Graph times"
        )
        left_out = rec.missing_note(tasks, gpu)
        if fmt in ("csv", "json"):  # for a program: one number a cell
            table = Table(
                title,
                rec.MACHINE_COLUMNS,
                tuple(rec.machine_rows(tasks, gpu)),
                rec.MACHINE_NOTE + left_out,
                1,
            )
        else:
            table = Table(
                title, rec.TABLE_COLUMNS, tuple(rec.table_rows(tasks, gpu)), rec.TABLE_NOTE + left_out, 1
            )
        emit([table], fmt)
        return 0
    machine = probe()
    if machine.gpu is None:
        raise BeaverError(
            "no NVIDIA GPU visible: named baselines are timed on a GPU (--table shows stored ones)"
        )
    if not machine.torch:
        raise BeaverError("torch is not importable by this interpreter: the PyTorch baselines need it")
    gpu = machine.gpu
    if args.missing:
        from beavertui.engine.timing.named_baselines import load as stored

        tasks = [t for t in tasks if stored(t, gpu) is None]
        if not tasks:  # what was asked is done: nothing to time, no ceilings to measure
            print(
                f"nothing to time: every task chosen has its named baselines stored for {gpu.slug}",
                file=sys.stderr,
            )
            return 0
    ceil = measure(gpu, torch_ok=True)
    print(
        f"ceilings on {gpu.slug}: copy {ceil.copy_gbps or '?'} GB/s, bf16 {ceil.bf16_tflops or '?'} TFLOP/s",
        file=sys.stderr, flush=True,
    )  # fmt: skip
    memory = memory_total_bytes()
    print(
        f"GPU memory: {rec.gib(memory)} (nvidia-smi): drivers are admitted side by side while their "
        f"estimated needs fit in {rec.HEADROOM:.0%} of it"
        if memory
        else "GPU memory: nvidia-smi does not tell it: every driver started warms up side by side",
        file=sys.stderr, flush=True,
    )  # fmt: skip
    from beavertui.engine.fileio import append_line, write_atomic

    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out, "")

    def keep(found: Any) -> None:  # a whole line as each set is stored: a run cut short keeps what it stored
        if args.out is not None:
            append_line(args.out, found.model_dump_json())

    outcomes = rec.record(
        tasks, gpu, jobs=args.jobs, trials=args.trials, warmup=args.warmup, budget_s=args.budget_s,
        warm_s=args.warm_s, progress=lambda line: print(line, file=sys.stderr, flush=True), measured=ceil,
        on_stored=keep, gpu_memory_bytes=memory,
    )  # fmt: skip
    if fmt == "json":
        for o in outcomes:
            print(json.dumps({"task_id": o.task_id, "stored": str(o.stored) if o.stored else None,
                              "reason": o.reason, "shared_with": o.shared_with, "note": o.note}))  # fmt: skip
        return 0
    done_rows = tuple(
        (
            o.task_id,
            "stored" if o.stored else "not stored",
            (rec.describe(o.found) if o.found else o.reason or "") + (f" ({o.note})" if o.note else ""),
        )
        for o in outcomes
    )
    done = sum(1 for o in outcomes if o.stored)
    emit([Table(f"named baselines on {gpu.slug}: {done} of {len(outcomes)} tasks stored",
                ("task", "state", "times (median of one call) or why none"), done_rows, keys=1)], fmt)  # fmt: skip
    return 0 if done else 3
