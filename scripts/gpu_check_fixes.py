"""Check every bundled task's minimal fix on this machine's GPU, as `beavertui check TASK --candidate FIX`.

For each task with a corpus/<task>/minimal_fix.patch: the patch is applied to the broken start
(Task.minimal_fix), the fixed file is written to OUT/fixes/<task>.cu, and the fixed file is run through
the same attempt `beavertui check` makes (build, test, compute-sanitizer memcheck on a failure, timing
against the reference, verdict with the default gate 0.7). Each task's events go to
OUT/events/<task>.jsonl, exactly as `check --json` prints them, and one row per task to OUT/fixes.tsv.

To fit the whole corpus into a few minutes, attempts overlap where that cannot change a measurement:
reference builds and candidate builds run on several CPU threads, while everything that touches the GPU
(the test run, the sanitizer, the timing) runs under one lock, one task at a time. Tasks that cannot
start their GPU part before the deadline are written as not_run.

    python3 scripts/gpu_check_fixes.py --out DIR [--deadline-s 500] [--workers 6] [--tasks a,b] [--shard i/n]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import sys
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beavertui.engine.corpus.load import load_corpus  # noqa: E402
from beavertui.engine.corpus.task import Task  # noqa: E402
from beavertui.engine.session.events import Timed, Verdict  # noqa: E402
from beavertui.engine.timing import speedup  # noqa: E402
from beavertui.engine.toolchain.base import AttemptOptions  # noqa: E402
from beavertui.engine.toolchain.local import LocalToolchain  # noqa: E402
from beavertui.engine.toolchain.resolve import require_gpu  # noqa: E402
from beavertui.service.environment import local_config  # noqa: E402

COLUMNS = (
    "task",
    "category",
    "success",
    "speedup",
    "correct",
    "reason",
    "candidate_ms",
    "reference_ms",
    "flags",
)
#: Slowest builds first, so that they overlap the GPU work of the quick ones.
FIRST = ("flashattn_v2", "gemm_tc")
GPU_SECONDS_NEEDED = 25.0
"""Do not start a task's GPU part with less time than this left before the deadline."""


def row(task: str, **cells: object) -> dict[str, str]:
    out = {c: "" for c in COLUMNS}
    out["task"] = task
    out.update({k: "" if v is None else str(v) for k, v in cells.items()})
    return out


def check_one(task: Task, out: Path, gpu: threading.Lock, deadline: float, gate: float) -> dict[str, str]:
    if time.monotonic() > deadline - GPU_SECONDS_NEEDED:
        return row(task.id, category="not_run", reason="out of time before its build")
    fixed = task.minimal_fix()
    assert fixed is not None
    (out / "fixes" / f"{task.id}.cu").write_text(fixed)
    tool = LocalToolchain(local_config())
    require_gpu(task)
    # The reference build is cached per reference + harness + toolkit; building it here keeps it off the lock.
    speedup.reference_workdir(task, tool.stage_config(), tool.config.timing)
    options = AttemptOptions(iteration=1, gate=gate, time_if_correct=True)
    events = tool.attempt(task, fixed, options)
    lines: list[str] = []
    built = next(events)  # the build: CPU only
    lines.append(built.model_dump_json())
    verdict: Verdict | None = None
    timed: Timed | None = None
    with gpu:
        if time.monotonic() > deadline - GPU_SECONDS_NEEDED:
            events.close()
            (out / "events" / f"{task.id}.jsonl").write_text("\n".join(lines) + "\n")
            return row(task.id, category="not_run", reason="out of time before its GPU part")
        for event in events:
            lines.append(event.model_dump_json())
            if isinstance(event, Timed):
                timed = event
            if isinstance(event, Verdict):
                verdict = event
    (out / "events" / f"{task.id}.jsonl").write_text("\n".join(lines) + "\n")
    assert verdict is not None
    t = timed.result if timed else None
    return row(
        task.id,
        category=verdict.category,
        success=str(verdict.success).lower(),
        speedup=f"{verdict.speedup:.3f}" if verdict.speedup is not None else "",
        correct=str(verdict.correct).lower(),
        reason=verdict.reason,
        candidate_ms=f"{t.candidate_ms:.4f}" if t else "",
        reference_ms=f"{t.reference_ms:.4f}" if t else "",
        flags="; ".join(map(str, verdict.flags)),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--deadline-s", type=float, default=500.0, help="stop starting GPU work after this")
    ap.add_argument("--workers", type=int, default=6, help="threads building (one of them on the GPU)")
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: every task with a fix)")
    ap.add_argument("--shard", default="0/1", help="i/n: check every n-th task starting at i")
    ap.add_argument("--gate", type=float, default=0.7)
    args = ap.parse_args()
    start = time.monotonic()
    deadline = start + args.deadline_s
    out: Path = args.out
    (out / "fixes").mkdir(parents=True, exist_ok=True)
    (out / "events").mkdir(parents=True, exist_ok=True)
    load = load_corpus(ROOT / "corpus")
    wanted = {t for t in args.tasks.split(",") if t}
    tasks = [t for t in load.tasks if t.minimal_fix_path.is_file() and (not wanted or t.id in wanted)]
    tasks.sort(key=lambda t: (not t.id.startswith(FIRST), t.id))
    i, n = (int(x) for x in args.shard.split("/"))
    tasks = tasks[i::n]
    gpu = threading.Lock()
    rows: dict[str, dict[str, str]] = {}

    def guarded(task: Task) -> dict[str, str]:
        try:
            return check_one(task, out, gpu, deadline, args.gate)
        except Exception as exc:  # one task's trouble must not lose the others' rows
            (out / "events" / f"{task.id}.error.txt").write_text(traceback.format_exc())
            return row(task.id, category="error", reason=f"{type(exc).__name__}: {exc}".replace("\t", " "))

    tsv = out / "fixes.tsv"
    tsv.write_text("\t".join(COLUMNS) + "\n")

    def cells(r: dict[str, str]) -> str:
        return "\t".join(r[c].replace("\t", " ").replace("\n", " ") for c in COLUMNS) + "\n"

    with cf.ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(guarded, t) for t in tasks]
        for fut in cf.as_completed(futures):
            r = fut.result()
            rows[r["task"]] = r
            with tsv.open("a") as fh:  # row by row, so a run cut short keeps what it finished
                fh.write(cells(r))
            print(
                f"[{time.monotonic() - start:5.0f} s] {r['task']}: {r['category']} success={r['success']} "
                f"speedup={r['speedup']} {r['reason']}",
                flush=True,
            )
    tsv.write_text("\t".join(COLUMNS) + "\n" + "".join(cells(rows[t]) for t in sorted(rows)))
    ok = sum(r["success"] == "true" for r in rows.values())
    print(f"{ok} of {len(rows)} fixes pass at gate {args.gate}; {out / 'fixes.tsv'}")
    (out / "summary.json").write_text(json.dumps({"passed": ok, "checked": len(rows)}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
