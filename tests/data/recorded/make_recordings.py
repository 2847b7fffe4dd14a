"""Rebuild recordings.jsonl for the vec_scale fixture: real nvcc builds, composed GPU stages.

Run from the repository root: ``python3 tests/data/recorded/make_recordings.py``. Every build stage is
real (the task's own build command run with the local nvcc, its exit status, output and duration kept).
This machine has no GPU, so the run, compute-sanitizer and timing stages are COMPOSED by hand in the
formats the harness and compute-sanitizer print; the verdicts follow categories.md. Replace them with
outcomes recorded on a GPU (beavertui.engine.toolchain.recorded.RecordingToolchain) when one is available.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASK = HERE / "vec_scale"
BUILD = "nvcc -O2 -arch=sm_90 -I _common -I include -o test.out solution.cu test_main.cu"
N = 16777216

MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at scale_kernel(const float *, float *, float, int)+0x{pc:x}
=========     by thread ({tx},0,0) in block (65535,0,0)
=========     Address 0x{addr:x} is out of bounds
=========     and is {after} bytes after the nearest allocation at 0x7f3a28000000 of size 67108864 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: launch_scale(float const*, float*, float, int) [0x{host:x}] in test.out
=========
========= ERROR SUMMARY: 1 error
"""


def build(code: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(TASK / "testbench", work, dirs_exist_ok=True)
        shutil.copytree(HERE / "_common", work / "_common")
        (work / "solution.cu").write_text(code)
        start = time.monotonic()
        out = subprocess.run(BUILD, shell=True, cwd=work, capture_output=True, text=True)
        duration = time.monotonic() - start
    log = (out.stdout + out.stderr).replace(str(work) + "/", "")
    return {
        "kind": "build",
        "result": {
            "stage": "build",
            "command": BUILD,
            "rc": out.returncode,
            "duration_s": round(duration, 3),
            "log": log,
            "log_bytes": len(log.encode()),
        },
    }


def run(log: str, rc: int) -> dict[str, object]:
    return {
        "kind": "run",
        "result": {"stage": "run", "command": "./test.out", "rc": rc, "duration_s": 0.41, "log": log,
                   "log_bytes": len(log)},
    }


def memcheck(after: int, tx: int) -> dict[str, object]:
    text = MEMCHECK.format(pc=0x90 + tx, tx=tx, addr=0x7F3A2C000000 + after - 1, after=after, host=0x9A2F)
    record = {
        "tool": "memcheck",
        "kind": "Invalid __global__ read",
        "size": 4,
        "kernel": "scale_kernel(const float *, float *, float, int)",
        "block": "(65535,0,0)",
        "thread": f"({tx},0,0)",
        "address": f"0x{0x7F3A2C000000 + after - 1:x}",
        "detail": f"Address is out of bounds and is {after} bytes after the nearest allocation",
        "host_frame": "launch_scale(float const*, float*, float, int)",
        "text": "\n".join(text.splitlines()[1:7]),
    }
    return {
        "kind": "sanitize",
        "tool": "memcheck",
        "result": {"stage": "sanitize", "command": "compute-sanitizer --tool memcheck ./test.out", "rc": 1,
                   "duration_s": 3.2, "log": text, "log_bytes": len(text)},
        "records": [record],
        "error_count": 1,
    }


def timed(candidate_ms: float, reference_ms: float = 0.0312) -> dict[str, object]:
    return {
        "kind": "timing",
        "result": {
            "method": "beaver_time_ms",
            "candidate_ms": candidate_ms,
            "reference_ms": reference_ms,
            "candidate_cv": 0.011,
            "reference_cv": 0.009,
            "speedup": round(reference_ms / candidate_ms, 4),
            "candidate_samples": [candidate_ms] * 5,
            "reference_samples": [reference_ms] * 5,
        },
    }


def verdict(category: str, signature: str, correct: bool, decisive: list[str], speedup: float | None = None) -> dict[str, object]:
    return {"kind": "verdict", "category": category, "signature": signature, "correct": correct,
            "speedup": speedup, "decisive": decisive, "reason": "passed" if correct else category}


def first_error(log: str) -> str:
    return next(line for line in log.splitlines() if "error" in line)


MISMATCH_SIG = "MISMATCH out: <N> of <N> elements wrong, first at <N>: got <N> want <N>"
OOB_SIG = "Invalid __global__ read of size <N> bytes"


def outcome(name: str, code: str) -> list[dict[str, object]]:
    built = build(code)
    log = str(built["result"]["log"])  # type: ignore[index]
    if built["result"]["rc"] != 0:  # type: ignore[index]
        line = first_error(log)
        sig = "solution.cu(<N>): " + line.split("): ", 1)[1] if "): " in line else line
        return [built, verdict("buildability", sig, False, [line])]
    if name in ("broken_start", "oob2", "oob3", "oob4"):
        after = {"broken_start": 1, "oob2": 5, "oob3": 1, "oob4": 1}[name]
        mism = f"MISMATCH out: {N - (2 if name == 'oob2' else 1)} of {N} elements wrong, first at 0: got 0.000000 want -0.750000\n"
        if name == "oob3":
            mism = f"MISMATCH out: 1 of {N} elements wrong, first at {N - 1}: got 0.000000 want 0.262500\n"
        rec = memcheck(after, 255)
        return [built, run(mism, 1), rec, verdict("illegal_memory_access", OOB_SIG, False, [rec["result"]["log"].splitlines()[1]])]  # type: ignore[index]
    if name == "wrong":
        m = f"MISMATCH out: {N} of {N} elements wrong, first at 0: got 1.000000 want -0.750000\n"
        return [built, run(m, 1), verdict("functional_correctness", MISMATCH_SIG, False, [m.strip()])]
    if name == "wrong2":
        m = f"MISMATCH out: {N // 2} of {N} elements wrong, first at {N // 2}: got nan want 0.262500\n"
        return [built, run(m, 1), verdict("functional_correctness", MISMATCH_SIG, False, [m.strip()])]
    ms = {"slow": 1.984, "naive": 0.0321, "reference": 0.0312}[name]
    t = timed(ms)
    return [built, run("PASS\n", 0), t, verdict("passed", "", True, [], t["result"]["speedup"])]  # type: ignore[index]


def harness() -> str:
    """sha256 of the fixture's harness: a recorded outcome holds only for the harness it was judged on."""
    from beavertui.engine.corpus.load import load_corpus

    return load_corpus(HERE).get("vec_scale").harness_hash() or ""


def main() -> None:
    lines = []
    digest = harness()
    for path in sorted((TASK / "candidates").glob("*.cu")):
        code = path.read_text()
        events = outcome(path.stem, code)
        line = {"name": path.stem, "task": "vec_scale", "harness": digest, "code": code, "events": events}
        lines.append(json.dumps(line))
        print(path.stem, events[-1]["category"], events[-1]["signature"])
    (HERE / "vec_scale.recordings.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
