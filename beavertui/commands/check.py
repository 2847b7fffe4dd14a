"""`beavertui check TASK`: build, run, sanitize and time one candidate (default: the broken start)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from beavertui.commands.numbers import float_in
from beavertui.engine.limits import MAX_GATE


def register(sub: Any) -> None:
    p = sub.add_parser("check", help="run one candidate against a task and say exactly what happened")
    p.add_argument("task", help="task id")
    p.add_argument("--corpus", type=Path, default=None, help="corpus folder (default: the bundled corpus)")
    p.add_argument(
        "--candidate", type=Path, default=None, help="candidate source (default: the broken start)"
    )
    p.add_argument("--reference", action="store_true", help="check the task's reference solution instead")
    p.add_argument(
        "--sanitize",
        action="append",
        default=[],
        choices=["memcheck", "racecheck", "synccheck", "initcheck"],
        help="also run this compute-sanitizer tool (repeatable)",
    )
    p.add_argument("--gate", type=float_in(0, MAX_GATE), default=0.7, help="speedup gate p (default 0.7)")
    p.add_argument("--no-timing", action="store_true", help="do not time a correct candidate")
    p.add_argument("--json", action="store_true", help="print the events and the verdict as JSON lines")
    p.add_argument("--keep", action="store_true", help="keep the work dir and print its path")
    p.set_defaults(func=_handle)


def _handle(args: argparse.Namespace) -> int:
    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.errors import BeaverError
    from beavertui.engine.session.events import Verdict
    from beavertui.engine.toolchain.base import AttemptOptions
    from beavertui.engine.toolchain.local import LocalToolchain
    from beavertui.engine.toolchain.resolve import require_gpu
    from beavertui.service.environment import default_corpus, local_config

    task = load_corpus(args.corpus or default_corpus(), [args.task]).get(args.task)
    require_gpu(task)
    tool = LocalToolchain(local_config())
    if args.candidate is not None and args.reference:
        raise BeaverError("give --candidate or --reference, not both")
    if args.reference:
        code = task.reference()
        if code is None:
            raise BeaverError(f"{task.id} ships no reference")
    elif args.candidate is not None:
        try:
            code = args.candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BeaverError(f"{args.candidate}: cannot read ({exc})") from None
    else:
        code = task.broken_start()
    options = AttemptOptions(
        iteration=1,
        gate=args.gate,
        sanitize_tools=tuple(args.sanitize),
        time_if_correct=not args.no_timing,
        keep_workdir=args.keep,
    )
    verdict: Verdict | None = None
    for event in tool.attempt(task, code, options):
        if args.json:
            print(event.model_dump_json(), flush=True)
        else:
            _show(event)
        if isinstance(event, Verdict):
            verdict = event
    assert verdict is not None
    if args.keep and tool.last_workdir is not None:
        print(f"work dir kept: {tool.last_workdir}", file=sys.stderr)
    return 0 if verdict.success else 1


def _show(event: Any) -> None:
    kind = event.kind
    if kind in ("build", "run"):
        r = event.result
        end = "timed out" if r.timed_out else (f"signal {r.signal}" if r.signal else f"exit {r.rc}")
        took = "" if r.duration_s is None else f" in {r.duration_s:.2f} s"
        print(f"{kind:>9}: {end}{took}  ({r.command})")
        if r.rc != 0 and r.log.strip():
            for line in r.log.strip().splitlines()[-12:]:
                print(f"           | {line}")
    elif kind == "sanitize":
        n = "no summary" if event.error_count is None else f"{event.error_count} errors"
        r = event.result
        end = " (timed out)" if r.timed_out else ""
        took = "" if r.duration_s is None else f" in {r.duration_s:.2f} s"
        print(f" sanitize: {event.tool}: {n}, {len(event.records)} records{took}{end}")
        for rec in event.records[:5]:
            where = f" in {rec.kernel}" if rec.kernel else ""
            thread = f" thread {rec.thread} block {rec.block}" if rec.thread else ""
            size = f" ({rec.size} bytes)" if rec.size else ""
            print(
                f"           - {rec.kind}{size}{where}{thread}" + (f" @ {rec.address}" if rec.address else "")
            )
    elif kind == "timing":
        t = event.result
        print(
            f"   timing: {t.method}: candidate {t.candidate_ms:.4f} ms (CV {100 * t.candidate_cv:.1f}%), "
            f"reference {t.reference_ms:.4f} ms (CV {100 * t.reference_cv:.1f}%), speedup {t.speedup:.3f}x"
            + (" [unstable]" if t.unstable else "")
            + (" [implausible: audit]" if t.implausible else "")
        )
    elif kind == "infra_error":
        print(f"    infra: {event.source}: {event.detail}", file=sys.stderr)
    elif kind == "verdict":
        sp = "not measured" if event.speedup is None else f"{event.speedup:.3f}x"
        print(f"  verdict: {event.category}  ({event.reason}; speedup {sp}, gate {event.gate})")
        if event.signature:
            print(f"signature: {event.signature}")
        for flag in event.flags:
            print(f"     flag: {flag}")
    else:
        print(json.dumps(event.model_dump()))
