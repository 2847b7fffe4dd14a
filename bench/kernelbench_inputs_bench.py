"""Where a kernelbench timing driver's large inputs are drawn, measured on a GPU machine: on the host ahead
of the GPU hold and kept, against dropped ahead and drawn again on the GPU once it is held.

    python3 bench/kernelbench_inputs_bench.py run --corpus DIR --out DIR [--task GLOB ...] [--min-bytes B]
                                                  [--trials N] [--budget-s S]
    python3 bench/kernelbench_inputs_bench.py summary [--json FILE] DIR

``run``: the corpus's kernelbench instances, one per distinct problem.py, whose inputs (the task's
get_inputs under torch's ``meta`` device: shapes and dtypes, no memory) take at least ``--min-bytes``
(default 2 GiB, the driver's ``--ahead-max-bytes``: the ones a batch's driver drops while it waits). For each,
in a work dir of the task's testbench with the reference submission (families.reference_submission: what
``scripted:@alternate`` submits, the reference model as ModelNew), the timing driver runs twice, the GPU to
itself, its go file already there: ``kept`` (``--ahead-max-bytes`` above any input: drawn on the host before
the go, copied to the GPU after it) and ``gpu`` (``--ahead-max-bytes 0``: not kept before the go, drawn on
the GPU after it), the first of the two alternating from task to task. Per
run: the process's wall time, the driver's phases (host seconds) and which ran before the go, the held
seconds (the phases after the go: what a batch's GPU hold pays), and both sides' median call (ms).
``DIR/kernelbench-inputs.json`` is written again after each task, so a run cut by its time limit keeps what
it measured.

``summary``: per task the inputs' size, the host's draw (``inputs`` of the ``kept`` run, before the go: what a
driver before the GPU draw did again with the GPU held), the GPU's draw, the held seconds of each run, and
both sides' median call in each run with their ratio (the timing on GPU-drawn inputs against host-drawn
ones); then the medians over the tasks.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from timing_floor_bench import gpu_info  # noqa: E402

from beavertui.engine.timing.kernelbench_driver import load_module, meta_bytes  # noqa: E402
from beavertui.engine.timing.speedup import DRIVER_TAG as TAG  # noqa: E402
from beavertui.engine.timing.speedup import KERNELBENCH_DRIVER as DRIVER  # noqa: E402

RESULT = "kernelbench-inputs.json"
#: The two runs of each task: the driver's --ahead-max-bytes in each.
MODES = {"kept": 1 << 62, "gpu": 0}


def input_bytes(problem: Path) -> int | None:
    """The bytes of the task's get_inputs, sized on torch's meta device as the driver sizes them (None when
    that fails)."""
    import torch

    try:
        mod = load_module(problem, "beaver_kb_size")
    except Exception:
        return None
    return meta_bytes(mod, torch)


def drive(work: Path, cap: int, trials: int) -> dict[str, Any]:
    (work / "go.json").write_text("{}")
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, str(DRIVER), "--problem", "problem.py", "--solution", "solution.py",
         "--trials", str(trials), "--go-file", "go.json", "--ahead-max-bytes", str(cap)],
        cwd=work, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    line = next((x for x in res.stdout.splitlines() if x.startswith(TAG)), None)
    doc: dict[str, Any] = (
        json.loads(line[len(TAG) :]) if line else {"error": (res.stderr or res.stdout)[-500:]}
    )
    row: dict[str, Any] = {"wall_s": round(wall, 3), "rc": res.returncode}
    if "error" in doc:
        row["error"] = doc["error"]
        return row
    phases = doc["phases_s"]
    before = set(doc.get("before_go") or [])
    row.update(
        phases_s=phases,
        before_go=sorted(before),
        held_s=round(sum(v for k, v in phases.items() if k not in before), 3),
        reference_ms=round(statistics.median(doc["reference_ms"]), 4),
        candidate_ms=round(statistics.median(doc["candidate_ms"]), 4),
        max_abs_diff=doc.get("max_abs_diff"),
    )
    return row


def run(a: argparse.Namespace) -> int:
    from beavertui.engine.corpus import families
    from beavertui.engine.corpus.load import load_corpus

    t_start = time.perf_counter()
    a.out.mkdir(parents=True, exist_ok=True)
    corpus = load_corpus(a.corpus)
    seen: set[str] = set()
    picked: list[Any] = []
    for task in corpus.tasks:
        if not task.id.startswith("kernelbench_") or task.testbench is None:
            continue
        if a.task and not any(fnmatch.fnmatchcase(task.id, p) for p in a.task):
            continue
        digest = hashlib.sha256((task.testbench / "problem.py").read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            picked.append(task)
    sizes = {t.id: input_bytes(t.testbench / "problem.py") for t in picked}
    chosen = [t for t in picked if (sizes[t.id] or 0) >= a.min_bytes]
    doc: dict[str, Any] = {
        "gpu": gpu_info(),
        "trials": a.trials,
        "min_bytes": a.min_bytes,
        "problems": len(picked),
        "unsized": sorted(t for t, n in sizes.items() if n is None),
        "tasks": {},
    }
    print(f"{len(picked)} distinct problems; {len(chosen)} with inputs >= {a.min_bytes} bytes", flush=True)
    for i, task in enumerate(chosen):
        row: dict[str, Any] = {"input_bytes": sizes[task.id]}
        doc["tasks"][task.id] = row
        if time.perf_counter() - t_start > a.budget_s:
            row["not_reached"] = True
            continue
        sub = families.reference_submission(task)
        order = list(MODES) if i % 2 == 0 else list(reversed(MODES))
        for mode in order:
            work = Path(tempfile.mkdtemp(prefix="beaver-kb-inputs-"))
            try:
                shutil.copytree(task.testbench, work, dirs_exist_ok=True)
                (work / "solution.py").write_text(sub or "")
                row[mode] = drive(work, MODES[mode], a.trials)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(f"[{time.perf_counter() - t_start:.0f} s] {task.id} {mode}: {row[mode]}", flush=True)
        (a.out / RESULT).write_text(json.dumps(doc, indent=1))
    (a.out / RESULT).write_text(json.dumps(doc, indent=1))
    return 0


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for tid, row in doc["tasks"].items():
        kept, gpu = row.get("kept"), row.get("gpu")
        if not (isinstance(kept, dict) and isinstance(gpu, dict)) or "error" in kept or "error" in gpu:
            continue
        rows.append(
            {
                "task": tid,
                "input_gib": round(row["input_bytes"] / (1 << 30), 2),
                "host_draw_s": kept["phases_s"].get("inputs"),
                "gpu_draw_s": gpu["phases_s"].get("inputs_gpu"),
                "held_kept_s": kept["held_s"],
                "held_gpu_s": gpu["held_s"],
                "ref_ms": [kept["reference_ms"], gpu["reference_ms"]],
                "cand_ms": [kept["candidate_ms"], gpu["candidate_ms"]],
                "ref_ratio": round(gpu["reference_ms"] / kept["reference_ms"], 4),
            }
        )

    def med(key: str) -> float | None:
        xs = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        return round(statistics.median(xs), 3) if xs else None

    done = {x["task"] for x in rows}
    left = {
        t: "not reached (time budget)" if r.get("not_reached") else "a run failed"
        for t, r in doc["tasks"].items()
        if t not in done
    }
    return {
        "rows": rows,
        "left_out": left,
        "median": {
            k: med(k) for k in ("host_draw_s", "gpu_draw_s", "held_kept_s", "held_gpu_s", "ref_ratio")
        },
    }


def summary(a: argparse.Namespace) -> int:
    doc = json.loads((a.dir / RESULT).read_text())
    s = summarize(doc)
    print(f"GPU: {doc['gpu']}; {doc['trials']} trials a side; inputs >= {doc['min_bytes']} bytes")
    print(
        "| task | inputs GiB | host draw s | GPU draw s | held s (kept) | held s (GPU draw) | ref ms kept/GPU |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in s["rows"]:
        print(
            f"| {r['task']} | {r['input_gib']} | {r['host_draw_s']} | {r['gpu_draw_s']} | {r['held_kept_s']} "
            f"| {r['held_gpu_s']} | {r['ref_ms'][0]} / {r['ref_ms'][1]} |"
        )
    m = s["median"]
    print(
        f"medians over {len(s['rows'])} tasks: host draw {m['host_draw_s']} s, GPU draw {m['gpu_draw_s']} s, "
        f"held {m['held_kept_s']} s (kept) and {m['held_gpu_s']} s (GPU draw), reference call GPU/kept {m['ref_ratio']}"
    )
    for why in sorted(set(s["left_out"].values())):
        ids = [t for t, w in s["left_out"].items() if w == why]
        print(f"left out, {why}: {len(ids)} ({', '.join(ids)})")
    if a.json:
        a.json.write_text(json.dumps(s, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--corpus", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--task", action="append")
    r.add_argument("--min-bytes", type=int, default=2 << 30)
    r.add_argument("--trials", type=int, default=20)
    r.add_argument("--budget-s", type=float, default=400.0)
    s = sub.add_parser("summary")
    s.add_argument("dir", type=Path)
    s.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    return run(a) if a.cmd == "run" else summary(a)


if __name__ == "__main__":
    sys.exit(main())
