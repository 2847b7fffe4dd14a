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
        "(and flags, when the run log shows output the kernel never wrote). A line that cannot be classified "
        "is an error object in the output, and the command ends with exit status 2 and one line on stderr.",
    )
    p.add_argument("file", nargs="?", default="-", help="JSON-Lines file, or - for standard input (default)")
    p.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from beavertui.engine.errors import EXIT_BAD_INPUT, BeaverError

    name = "standard input" if args.file == "-" else args.file
    try:
        if args.file == "-":
            bad = _filter(sys.stdin, sys.stdout)
        else:
            with open(args.file, encoding="utf-8", errors="replace") as fh:
                bad = _filter(fh, sys.stdout)
    except OSError as exc:
        raise BeaverError(f"{args.file}: {exc.strerror}") from None
    if not bad:
        return 0
    n, first = len(bad), bad[0]
    print(
        f"beavertui: {name}: {n} line(s) not classified (each is an error object in the output), "
        f"the first: line {first['line']}: {first['error']}",
        file=sys.stderr,
    )
    return EXIT_BAD_INPUT


def _filter(src: TextIO, dst: TextIO) -> list[dict[str, Any]]:
    """Classify each line of ``src`` onto ``dst``; the error objects of the lines that were not."""
    from beavertui.engine.judge.anticheat import poison_flags
    from beavertui.engine.judge.classify import classify_record

    bad: list[dict[str, Any]] = []
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
            out = {"line": n, "error": "JSON nested too deeply"}
            bad.append(out)
        except (json.JSONDecodeError, ValueError) as exc:
            out = {"line": n, "error": str(exc)}
            bad.append(out)
        dst.write(json.dumps(out) + "\n")
        dst.flush()
    return bad
