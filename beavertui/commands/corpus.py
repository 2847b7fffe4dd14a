"""`beavertui corpus list|validate`: what tasks a corpus holds and which of them are valid on this GPU."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("corpus", help="list or validate a task corpus")
    csub = p.add_subparsers(dest="corpus_command", metavar="ACTION", required=True)
    ls = csub.add_parser("list", help="list the tasks of a corpus and whether each can run here")
    ls.add_argument(
        "--corpus", type=Path, default=None, help="corpus folder (native corpus/ or release data/)"
    )
    ls.add_argument("--json", action="store_true", help="one JSON object per task on stdout")
    ls.set_defaults(func=_list)
    va = csub.add_parser("validate", help="check references pass, broken starts fail, and time references")
    va.add_argument("--corpus", type=Path, default=None, help="corpus folder")
    va.add_argument("--task", action="append", default=None, metavar="ID", help="only this task (repeatable)")
    va.add_argument("--json", action="store_true", help="JSON on stdout")
    va.add_argument("--no-timing", action="store_true", help="skip reference timing")
    va.set_defaults(func=_validate)


def _load(args: argparse.Namespace) -> Any:
    from beavertui.engine.corpus import default_corpus, load_corpus

    return load_corpus(args.corpus or default_corpus(), getattr(args, "task", None))


def _list(args: argparse.Namespace) -> int:
    from beavertui.engine.corpus import runnable_here
    from beavertui.engine.gpu import probe

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
    if args.json:
        for r in rows:
            print(json.dumps(r))
        for p in load.problems:
            print(json.dumps({"error": p}))
        return 0
    table = [["id", "family", "label", "solution file", "runs here"]]
    for r in rows:
        label = r["label"] if r["label"] == r["category"] else f"{r['label']} ({r['category']})"
        table.append(
            [
                r["id"],
                r["family"],
                label,
                r["solution_file"],
                "yes" if r["runnable"] else f"no: {r['reason']}",
            ]
        )
    print(f"{load.root}: {len(rows)} tasks, {sum(r['runnable'] for r in rows)} runnable here")
    print(_plain(table))
    for p in load.problems:
        print(f"malformed: {p}", file=sys.stderr)
    if not rows and not load.problems:
        print(f"no tasks in {load.root}", file=sys.stderr)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError

    raise BeaverError("corpus validate is not available yet")


def _plain(rows: list[list[str]]) -> str:
    """A plain-text table: left-aligned columns, two spaces apart, a rule under the header."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
