#!/usr/bin/env python3
"""Record real nvcc, runtime and compute-sanitizer outputs of crafted CUDA programs on a GPU.

Each case in tests/data/gpu_cases/ is built with nvcc (sm_90 unless the case says otherwise), run
plainly with a time limit (process group killed on timeout), and, where the case names a tool, run
again under compute-sanitizer. Every build/run/sanitizer command, log and exit status goes into one
JSON-Lines file (the input format of `beavertui classify`) with the category the planted bug must get
under shared/spec/categories.md and a note. Standard library only.

    python3 scripts/capture_logs.py --out DIR      # writes DIR/gpu_logs.jsonl and DIR/probe.txt
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "gpu_cases"

# id, source, arch, sanitizer tool, expected category under categories.md, note
TABLE = [
    ("pass", "pass.cu", "sm_90", "memcheck", "passed", "correct vector add; memcheck clean"),
    (
        "oob_write",
        "oob_write.cu",
        "sm_90",
        "memcheck",
        "illegal_memory_access",
        "far out-of-bounds write; runtime reports it",
    ),
    (
        "oob_read_silent",
        "oob_read_silent.cu",
        "sm_90",
        "memcheck",
        "illegal_memory_access",
        "reads one past the end, output still right (rc 0); only the memcheck override catches it",
    ),
    (
        "oob_read_mismatch",
        "oob_read_mismatch.cu",
        "sm_90",
        "memcheck",
        "functional_correctness",
        "off-by-one stencil reading in[n]: the plain run is a mismatch, and memcheck reports 0 errors because in[n] "
        "lies inside the adjacent managed allocation (out); without memcheck evidence the category stays functional",
    ),
    (
        "misaligned",
        "misaligned.cu",
        "sm_90",
        "memcheck",
        "illegal_memory_access",
        "double read at a 4-byte offset",
    ),
    ("oom", "oom.cu", "sm_90", None, "out_of_memory", "cudaMalloc of 256 TiB"),
    (
        "device_assert",
        "device_assert.cu",
        "sm_90",
        "memcheck",
        "functional_correctness",
        "device-side assert fails",
    ),
    (
        "wrong_result",
        "wrong_result.cu",
        "sm_90",
        "memcheck",
        "functional_correctness",
        "wrong scale; harness says FAILED",
    ),
    (
        "race",
        "race.cu",
        "sm_90",
        "racecheck",
        "functional_correctness",
        "shared-memory reduction without barriers: wrong sum (exit 1); racecheck evidence never changes the category",
    ),
    (
        "syncdiv",
        "syncdiv.cu",
        "sm_90",
        "synccheck",
        "passed",
        "barrier in a divergent branch: the plain run exits 0; synccheck evidence never changes the category",
    ),
    (
        "uninit",
        "uninit.cu",
        "sm_90",
        "initcheck",
        "passed",
        "reads never-written device memory, exits 0; initcheck findings are evidence only",
    ),
    ("spin", "spin.cu", "sm_90", None, "timeout", "kernel never terminates; killed by the time limit"),
    (
        "no_kernel_image",
        "pass.cu",
        "sm_100a",
        None,
        "functional_correctness",
        "built for sm_100a, run on sm_90, but this harness never checks the launch error: its log shows only a "
        "mismatch, so from the logs it is a wrong result (see no_kernel_image_checked)",
    ),
    (
        "no_kernel_image_checked",
        "launch_checked.cu",
        "sm_100a",
        None,
        "environment_dependency",
        "built for sm_100a, run on sm_90; the harness checks the launch",
    ),
    ("sigfpe", "sigfpe.cu", "sm_90", None, "functional_correctness", "host integer division by zero"),
    ("segfault", "segfault.cu", "sm_90", None, "illegal_memory_access", "host null-pointer write (SIGSEGV)"),
    ("syntax_error", "syntax_error.cu", "sm_90", None, "buildability", "missing semicolon"),
    (
        "missing_header",
        "missing_header.cu",
        "sm_90",
        None,
        "environment_dependency",
        "CUTLASS header not installed",
    ),
    ("undefined_ref", "undefined_ref.cu", "sm_90", None, "integration", "declared function never defined"),
    (
        "unsupported_arch",
        "pass.cu",
        "sm_999",
        None,
        "environment_dependency",
        "nvcc does not know the architecture",
    ),
]
TORCH_OOM = "import torch; x = torch.empty(1 << 46, device='cuda'); print(x.shape)"


def sh(cmd: list[str] | str, cwd: Path, limit: float, env: dict[str, str] | None = None) -> dict:
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            shell=isinstance(cmd, str),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    except OSError as exc:
        return {"rc": 127, "signal": None, "timed_out": False, "log": f"{exc}\n", "seconds": 0.0}
    try:
        out, _ = proc.communicate(timeout=limit)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    rc = None if timed_out or proc.returncode < 0 else proc.returncode
    text = out.decode("utf-8", "replace")
    if len(text) > 200_000:
        text = text[:100_000] + "\n[... omitted ...]\n" + text[-100_000:]
    return {
        "rc": rc,
        "signal": -proc.returncode if proc.returncode < 0 and not timed_out else None,
        "timed_out": timed_out,
        "log": text,
        "seconds": round(time.monotonic() - t0, 3),
    }


def build(case: tuple, work: Path) -> tuple[tuple, list[str], dict]:
    cid, src, arch = case[0], case[1], case[2]
    d = work / cid
    d.mkdir()
    shutil.copy(CASES / "common.cuh", d / "common.cuh")
    shutil.copy(CASES / src, d / src)
    cmd = ["nvcc", "-O2", f"-arch={arch}", "-o", cid, src]
    return case, cmd, sh(cmd, d, 180)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", action="append", default=None, metavar="ID", help="record only these cases")
    args = ap.parse_args()
    table = [c for c in TABLE if args.only is None or c[0] in args.only]
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="beaver-capture-"))
    gpu = (
        sh(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"], work, 30)[
            "log"
        ].strip()
        if shutil.which("nvidia-smi")
        else "no GPU"
    )
    nvcc = (
        subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    )
    with ThreadPoolExecutor(8) as pool:
        built = list(pool.map(lambda c: build(c, work), table))
    with open(args.out / "gpu_logs.jsonl", "w") as fh:
        for case, bcmd, b in built:
            cid, _src, _arch, tool, expected, note = case
            d = work / cid
            rec = {
                "id": cid,
                "expected_category": expected,
                "note": note,
                "gpu": gpu,
                "toolkit": nvcc,
                "build_cmd": " ".join(bcmd),
                "build_rc": b["rc"] if b["rc"] is not None else -1,
                "build_log": b["log"],
                "run_cmd": None,
                "run_rc": None,
                "run_log": "",
                "run_signal": None,
                "timed_out": b["timed_out"],
                "sanitizer_tool": None,
                "sanitizer_cmd": None,
                "sanitizer_rc": None,
                "sanitizer_log": None,
            }
            if b["rc"] == 0:
                limit = 8 if cid == "spin" else 60
                r = sh([f"./{cid}"], d, limit)
                rec.update(
                    run_cmd=f"./{cid}",
                    run_rc=r["rc"],
                    run_log=r["log"],
                    run_signal=r["signal"],
                    timed_out=r["timed_out"],
                    run_seconds=r["seconds"],
                )
                if tool:
                    scmd = ["compute-sanitizer", "--tool", tool, "--print-limit", "100", f"./{cid}"]
                    s = sh(scmd, d, 120)
                    rec.update(
                        sanitizer_tool=tool,
                        sanitizer_cmd=" ".join(scmd),
                        sanitizer_rc=s["rc"],
                        sanitizer_log=s["log"],
                        sanitizer_timed_out=s["timed_out"],
                    )
            fh.write(json.dumps(rec) + "\n")
            print(
                f"{cid:20s} build={rec['build_rc']} run={rec['run_rc']} sig={rec['run_signal']} "
                f"timeout={rec['timed_out']} sanitizer={rec['sanitizer_rc']}",
                flush=True,
            )
        if args.only is None or "torch_oom" in args.only:
            r = sh([sys.executable, "-c", TORCH_OOM], work, 120)
            rec = {
                "id": "torch_oom",
                "expected_category": "out_of_memory",
                "note": "torch.empty of 256 TiB on the GPU",
                "gpu": gpu,
                "toolkit": nvcc,
                "build_cmd": None,
                "build_rc": 0,
                "build_log": "",
                "run_cmd": "python -c " + json.dumps(TORCH_OOM),
                "run_rc": r["rc"],
                "run_log": r["log"],
                "run_signal": r["signal"],
                "timed_out": r["timed_out"],
                "sanitizer_log": None,
            }
            fh.write(json.dumps(rec) + "\n")
            print(f"torch_oom run={r['rc']}", flush=True)
    left = subprocess.run(
        ["bash", "-c", "ps -eo pid,cmd | grep -c '[b]eaver-capture' || true"], capture_output=True, text=True
    ).stdout.strip()
    print(f"processes still running from the capture: {left}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
