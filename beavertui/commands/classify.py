"""`beavertui classify [FILE|-]`: classify recorded attempts (JSON Lines in, JSON Lines out), no GPU."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO


def register(sub: Any) -> None:
    p = sub.add_parser(
        "classify",
        help="classify recorded attempt logs (JSON Lines) into the eight categories",
        description="Reads one JSON object per line (build_rc, build_log, run_rc, run_log, timed_out, "
        "sanitizer_log) and writes one JSON object per line with category, signature and the decisive lines "
        "(and flags, when the run log shows output the kernel never wrote).",
    )
    p.add_argument("file", nargs="?", default="-", help="JSON-Lines file, or - for standard input (default)")
    p.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import BeaverError

    if args.file == "-":
        return _filter(sys.stdin, sys.stdout)
    try:
        with open(args.file, encoding="utf-8", errors="replace") as fh:
            return _filter(fh, sys.stdout)
    except OSError as exc:
        raise BeaverError(f"{args.file}: {exc.strerror}") from None


def _filter(src: TextIO, dst: TextIO) -> int:
    from beavertui.engine.judge.anticheat import poison_flags
    from beavertui.engine.judge.classify import classify_record

    bad = 0
    for n, line in enumerate(src, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out = classify_record(obj)
            echo = {k: obj[k] for k in ("id", "expected_category", "note") if k in obj}
            out = {**echo, **out}
            flags = poison_flags(obj["run_log"]) if isinstance(obj.get("run_log"), str) else []
            if flags:  # anti-cheat evidence in the log itself (output left poisoned)
                out["flags"] = [f.model_dump() for f in flags]
        except RecursionError:
            bad += 1
            out = {"line": n, "error": "JSON nested too deeply"}
        except (json.JSONDecodeError, ValueError) as exc:
            bad += 1
            out = {"line": n, "error": str(exc)}
        dst.write(json.dumps(out) + "\n")
        dst.flush()
    return 1 if bad else 0
