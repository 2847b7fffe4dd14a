"""Where the time of a timing stage goes, per benchmark process, on a GPU machine.

    python3 bench/timing_profile.py --out $OUT/timing_profile.json [--task ID ...] [--stage]

For each task (default: one per family) the reference is built (cached like any reference build), then:
1. ``./test.out --bench 20`` runs directly (no sandbox) with line-buffered output; every output line gets
   the wall time since the process was started (perf_counter), so the phases show: process start to the
   first line, the bench-size check, warm-up and timed launches, the check after timing, exit;
2. ``./test.out`` (correctness size) runs once, for its wall time;
3. with ``--stage``: the whole timing stage as ``Timer.measure`` runs it (sandboxed, 3 interleaved rounds
   of reference and candidate, the reference build standing in as the candidate), with each benchmark
   process's own duration.
A tiny program that only creates a CUDA context (``cudaFree(0)``) is run three times first: the per-process
cost of CUDA initialisation on this machine. Results: one JSON file (what docs/performance.md quotes).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT = [
    "flashattn_v2_00", "gemm_tc_00", "softmax_01", "layernorm_02", "reduce_01",
    "scan_01", "histogram_02", "transpose_00", "spmv_csr_01",
]  # fmt: skip

INIT_SRC = "#include <cuda_runtime.h>\nint main() { return cudaFree(0) == cudaSuccess ? 0 : 1; }\n"


def timed_lines(cmd: list[str], cwd: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["stdbuf", "-oL", "-eL", *cmd], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines = [(round(time.perf_counter() - t0, 4), ln.rstrip()[:160]) for ln in proc.stdout]
    rc = proc.wait()
    return {"rc": rc, "wall_s": round(time.perf_counter() - t0, 4), "lines": lines}


def phases(lines: list[tuple[float, str]], wall: float) -> dict[str, float]:
    """Seconds per phase of one --bench run, from the line times."""
    times = [t for t, ln in lines if ln.startswith("BEAVER_TIME_MS")]
    first = lines[0][0] if lines else wall
    out = {"to_first_line": first}
    if times:
        out["first_line_to_first_timed"] = round(times[0] - first, 4)
        out["timed_span"] = round(times[-1] - times[0], 4)
        out["after_last_timed"] = round(wall - times[-1], 4)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--task", action="append")
    ap.add_argument("--stage", action="store_true", help="also run the whole sandboxed timing stage")
    ap.add_argument("--budget-s", type=float, default=300.0)
    a = ap.parse_args()
    from concurrent.futures import ThreadPoolExecutor

    from beavertui.engine.corpus.load import load_corpus
    from beavertui.engine.host.gpu import probe
    from beavertui.engine.stage import stages
    from beavertui.engine.timing.speedup import Timer, reference_workdir
    from beavertui.service.environment import default_corpus, stage_config, timing_config

    t_start = time.perf_counter()
    machine = probe()
    sig = machine.gpu
    cfg = stage_config(sm=machine.sm)
    tcfg = timing_config()
    res: dict[str, Any] = {"gpu": sig.slug if sig else None, "tasks": {}}
    a.out.parent.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "init.cu"
        src.write_text(INIT_SRC)
        subprocess.run(["nvcc", "-o", str(Path(tmp) / "init"), str(src)], check=True)
        walls = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run([str(Path(tmp) / "init")], check=False)
            walls.append(round(time.perf_counter() - t, 4))
        res["cuda_init_s"] = walls

    corpus = load_corpus(default_corpus())
    tasks = [corpus.get(t) for t in (a.task or DEFAULT)]
    with ThreadPoolExecutor(8) as ex:
        works = list(ex.map(lambda t: reference_workdir(t, cfg, tcfg), tasks))
    res["build_s"] = round(time.perf_counter() - t_start, 1)
    for task, work in zip(tasks, works, strict=True):
        if time.perf_counter() - t_start > a.budget_s:
            res["tasks"][task.id] = {"skipped": "budget"}
            continue
        row: dict[str, Any] = {}
        bench = timed_lines(["./test.out", "--bench", "20"], work.path)
        row["bench"] = {
            "rc": bench["rc"],
            "wall_s": bench["wall_s"],
            "phases": phases(bench["lines"], bench["wall_s"]),
        }
        row["bench_lines"] = [
            x for x in bench["lines"] if not x[1].startswith(("BEAVER_TIME_MS", "BEAVER_HOST_MS"))
        ]
        plain = timed_lines(["./test.out"], work.path)
        row["test"] = {"rc": plain["rc"], "wall_s": plain["wall_s"]}
        if a.stage:
            cand_dir = Path(tempfile.mkdtemp(prefix="beaver-prof-"))
            shutil.copytree(work.path, cand_dir, symlinks=True, dirs_exist_ok=True)
            cand = stages.WorkDir(path=cand_dir, task=task, manifest={}, links={})
            timer = Timer(task, cfg, tcfg)
            t = time.perf_counter()
            try:
                tr = timer.measure(cand)
                row["stage"] = {
                    "wall_s": round(time.perf_counter() - t, 3),
                    "runs": [(who, r.duration_s) for who, r in timer.runs],
                    "speedup": tr.speedup,
                    "note": tr.note,
                }
            except Exception as exc:
                row["stage"] = {"error": str(exc)[:300]}
            shutil.rmtree(cand_dir, ignore_errors=True)
        res["tasks"][task.id] = row
        print(task.id, json.dumps({k: v for k, v in row.items() if k != "bench_lines"}), flush=True)
        a.out.write_text(json.dumps(res, indent=1))
    res["wall_s"] = round(time.perf_counter() - t_start, 1)
    a.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
