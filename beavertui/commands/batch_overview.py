"""What a batch would run (``--dry-run``) and what it ran (the summary table printed at its end).

The plan is the manifest expanded into sessions, with the GPUs the local toolchain would use; nothing is
written. The summary reads each session's end line (outcome, tokens, cost, replies from the reply cache)
and prints one row per (model, protocol), in the format asked for with ``--format``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from beavertui.batch.local_executor import plan
from beavertui.batch.models import ReplyCaches
from beavertui.batch.rundir import RunManifest
from beavertui.engine.session.usage import dollars, tokens_text


def _gpus(args: argparse.Namespace, manifest: RunManifest) -> str:
    if manifest.toolchain != "local":
        return "none needed (recorded outcomes)"
    from beavertui.engine.host.gpu import visible_gpus

    gpus = visible_gpus(args.gpus)
    return ", ".join(gpus) if gpus else "none visible: the local toolchain would refuse to start"


def show_plan(manifest: RunManifest, run_dir: Path, args: argparse.Namespace, *, resuming: bool) -> int:
    """Print what the batch would run; write nothing."""
    from beavertui.commands.formats import output_format
    from beavertui.reports.cells import Table
    from beavertui.reports.render import emit
    from beavertui.service.catalog import read_row

    fmt = output_format(args)
    jobs = plan(manifest, run_dir)
    states = []
    for j in jobs:
        if not j.path.exists():
            states.append("new")
        else:
            row = read_row(j.path)
            states.append("done" if row.outcome in ("success", "failed") else "unfinished")
    gpus = _gpus(args, manifest)
    cache = manifest.reply_cache or "off"
    if manifest.reply_cache and manifest.reply_cache_sampled:
        cache += " (sampled replies reused too)"
    elif manifest.reply_cache and all(p.protocol.temperature > 0 for p in manifest.protocols):
        cache += " (unused here: every protocol samples at T > 0; --reply-cache-sampled reuses those replies)"
    if fmt == "json":
        doc = {
            "run_dir": str(run_dir),
            "exists": resuming,
            "tasks": manifest.tasks,
            "excluded_tasks": manifest.excluded_tasks,
            "withdrawn_tasks": manifest.withdrawn_tasks,
            "models": [m.name for m in manifest.models],
            "protocols": {p.slug: p.protocol.short() for p in manifest.protocols},
            "samples": manifest.samples,
            "gpus": gpus,
            "toolchain": manifest.toolchain,
            "reply_cache": manifest.reply_cache,
            "sessions": [
                {
                    "model": j.model.name,
                    "protocol": j.slug,
                    "task": j.task_id,
                    "sample": j.sample,
                    "path": str(j.path),
                    "state": s,
                }
                for j, s in zip(jobs, states, strict=True)
            ],
        }
        print(json.dumps(doc))
        return 0
    to_run = sum(s != "done" for s in states)
    lines = [
        f"dry run: nothing is written{' (the run exists)' if resuming else ''}; run folder {run_dir}",
        f"tasks ({len(manifest.tasks)}): {', '.join(manifest.tasks)}",
    ]
    if manifest.excluded_tasks:
        lines.append(f"left out ({len(manifest.excluded_tasks)}): " + "; ".join(
            f"{k}: {v}" for k, v in manifest.excluded_tasks.items()
        ))  # fmt: skip
    if manifest.withdrawn_tasks:
        lines.append(f"withdrawn after the run began ({len(manifest.withdrawn_tasks)}): " + "; ".join(
            f"{k}: {v}" for k, v in manifest.withdrawn_tasks.items()
        ))  # fmt: skip
    lines += [
        f"models ({len(manifest.models)}): {', '.join(m.name for m in manifest.models)}",
        f"protocols ({len(manifest.protocols)}): "
        + "; ".join(f"{p.slug} ({p.protocol.short()})" for p in manifest.protocols),
        f"samples: {manifest.samples}",
        f"sessions: {len(jobs)} ({to_run} to run: new or unfinished; {len(jobs) - to_run} done)",
        f"toolchain: {manifest.toolchain}; GPUs: {gpus}",
        f"reply cache: {cache}",
    ]
    # a CSV on standard output is the table alone (one read takes it whole): the summary goes to stderr
    prose = sys.stderr if fmt == "csv" else sys.stdout
    for ln in lines:
        print(ln, file=prose)
    print(file=prose)
    rows = tuple(
        (j.model.name, j.slug, j.task_id, str(j.sample), s) for j, s in zip(jobs, states, strict=True)
    )
    emit([Table("Sessions", ("model", "protocol", "task", "sample", "state"), rows, keys=3)], fmt)
    return 0


def summary_rows(run_dir: Path, left_out: list[str] | None = None) -> list[dict[str, Any]]:
    """One dict per (model, protocol folder) from the sessions' end lines; the folders the walk did not
    enter (unreadable, too deep) are added to ``left_out``, one line each."""
    from beavertui.service.catalog import read_row, session_files

    groups: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"sessions": 0, "finished": 0, "passed": 0, "attempts": 0, "tokens": None, "cost_usd": None,
                 "cached_replies": 0}
    )  # fmt: skip
    for path in session_files(run_dir, left_out=left_out):
        try:
            rel = path.relative_to(run_dir).parts
        except ValueError:
            continue
        row = read_row(path)
        # two models-file entries of one endpoint model are two models of the run, as metrics keeps them
        key = (row.identity or row.model, rel[1] if len(rel) >= 3 else row.protocol)
        g = groups[key]
        g["sessions"] += 1
        g["finished"] += row.outcome in ("success", "failed")
        g["passed"] += row.outcome == "success"
        g["attempts"] += row.judged  # as the summary line counts them: attempts with a verdict
        if row.tokens is not None:
            g["tokens"] = (g["tokens"] or 0) + row.tokens
        if row.cost is not None:
            g["cost_usd"] = (g["cost_usd"] or 0.0) + row.cost
        g["cached_replies"] += row.cached
    out = []
    for (model, proto), g in sorted(groups.items()):
        per = g["cost_usd"] / g["passed"] if g["cost_usd"] is not None and g["passed"] else None
        out.append({"model": model, "protocol": proto, **g, "cost_per_repair_usd": per})
    return out


def show_summary(
    manifest: RunManifest, run_dir: Path, args: argparse.Namespace, replies: ReplyCaches | None = None
) -> None:
    """The run's table per (model, protocol) on standard output, and what the reply cache did in this run
    (``replies``: the run's caches; None or unused: no line)."""
    from beavertui.commands.formats import output_format
    from beavertui.reports.cells import Table
    from beavertui.reports.render import emit
    from beavertui.service.metrics import left_out_lines

    fmt = output_format(args)
    left: list[str] = []
    rows = summary_rows(run_dir, left)
    if fmt == "json":
        print(json.dumps({"run_dir": str(run_dir), "groups": rows, "left_out": left}))
    else:
        cells = tuple(
            (
                r["model"],
                r["protocol"],
                f"{r['finished']}/{r['sessions']}",
                str(r["passed"]),
                str(r["attempts"]),
                "-" if r["tokens"] is None else tokens_text(r["tokens"]),
                dollars(r["cost_usd"]),
                dollars(r["cost_per_repair_usd"]),
                str(r["cached_replies"]),
            )
            for r in rows
        )
        cols = (
            "model",
            "protocol",
            "sessions",
            "passed",
            "attempts",
            "tokens",
            "cost",
            "per repair",
            "cached",
        )
        note = (
            "sessions: finished of all; attempts: with a verdict; tokens: prompt and completion as the "
            "endpoints reported them (- where none did); cost "
            "at the models' prices (- without prices, or without token counts); per repair: cost per session "
            "that passed; cached: replies served by the reply cache, not paid again."
        )
        emit([Table(f"Run {run_dir}", cols, cells, note=note)], fmt)
    for line in left_out_lines(left):  # each folder the summary did not read, one line, as metrics says it
        print(f"beavertui: {line}", file=sys.stderr)
    stats = replies.stats(manifest.reply_cache) if replies is not None and manifest.reply_cache else None
    if stats is not None and (stats.hits or stats.stored):
        print(
            f"beavertui: reply cache {manifest.reply_cache}: {stats.hits} replies reused, "
            f"{stats.stored} new ones stored"
            + (f", {stats.write_errors} could not be stored" if stats.write_errors else ""),
            file=sys.stderr,
        )
