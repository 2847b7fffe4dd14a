"""Realistic repair sessions for the TUI tests, built from real CUDA sources and real nvcc output.

The kernels under tests/tui/cuda/ were compiled here with nvcc 13.0 (-arch=sm_90); the build errors below
are that compiler's verbatim output. Sanitizer records and timing samples follow compute-sanitizer's and
the native timing contract's formats (shared/spec/timing.md); sample values are drawn from a seeded
generator so the files are reproducible. `python3 tests/tui/sessions_data.py` rewrites tests/data/sessions/.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import statistics
from pathlib import Path

from beavertui.engine.session.events import (
    Built,
    Candidate,
    Event,
    GpuSignature,
    Message,
    ModelInfo,
    Ran,
    Reply,
    Request,
    Sanitized,
    SanitizerRecord,
    SessionEnd,
    SessionHeader,
    StageResult,
    Stalled,
    TaskRef,
    Timed,
    TimingResult,
    Verdict,
)
from beavertui.engine.session.protocol import Protocol

HERE = Path(__file__).resolve().parent
CUDA = HERE / "cuda"
OUT = HERE.parent / "data" / "sessions"
T0 = 1_780_000_000.0

BUILD_CMD = "nvcc -O3 -arch=sm_90 -std=c++17 -I _common -o test.out test_main.cu kernel.cu"
TEST_CMD = "./test.out"
BENCH_CMD = "./test.out --bench 20"
GPU = GpuSignature(
    slug="nvidia_h200_sm_90_cuda_13_0",
    name="NVIDIA H200",
    compute_capability="9.0",
    driver="580.82.07",
    cuda="13.0",
)
SIG = "sgemm_tiled(const float *, const float *, float *, int, int, int)"


def src(name: str) -> str:
    return (CUDA / f"{name}.cu").read_text()


def sha(code: str) -> str:
    from beavertui.engine.code.hashing import code_hash

    return code_hash(code, "cuda")


def udiff(old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/kernel.cu", "b/kernel.cu")
    )


class Clock:
    def __init__(self, start: float = T0) -> None:
        self.t = start

    def __call__(self, step: float = 1.0) -> float:
        self.t += step
        return round(self.t, 3)


def task_ref(task_id: str = "gemm_tiled_bounds") -> TaskRef:
    code = src("broken")
    return TaskRef(
        id=task_id,
        family="gemm",
        label="illegal_memory_access",
        corpus="corpus",
        layout="native",
        solution_file="kernel.cu",
        language="cuda",
        broken_start=code,
        reference=src("reference"),
        broken_start_hash=hashlib.sha256(code.encode()).hexdigest()[:16],
    )


def header(session_id: str, model: str, protocol: Protocol, clock: Clock, **kw: object) -> SessionHeader:
    return SessionHeader(
        t=clock(0),
        session_id=session_id,
        tool_version="0.1.0",
        task=task_ref(),
        model=ModelInfo(
            name=model, kind="openai", base_url="http://127.0.0.1:8000/v1", params={"temperature": 0.0}
        ),
        protocol=protocol,
        gpu=GPU,
        **kw,  # type: ignore[arg-type]
    )


def samples(rng: random.Random, median: float, cv: float, n: int = 20) -> list[float]:
    return [round(median * (1 + rng.gauss(0, cv)), 6) for _ in range(n)]


def timing(
    rng: random.Random, cand_ms: float, ref_ms: float, cv_c: float = 0.008, cv_r: float = 0.006
) -> TimingResult:
    cs, rs = samples(rng, cand_ms, cv_c), samples(rng, ref_ms, cv_r)
    cm, rm = statistics.median(cs), statistics.median(rs)
    return TimingResult(
        method="beaver_time_ms",
        candidate_ms=round(cm, 6),
        reference_ms=round(rm, 6),
        candidate_cv=round(statistics.pstdev(cs) / statistics.mean(cs), 5),
        reference_cv=round(statistics.pstdev(rs) / statistics.mean(rs), 5),
        speedup=round(rm / cm, 4),
        candidate_samples=cs,
        reference_samples=rs,
    )


def reply_text(intro: str, code: str) -> str:
    return f"{intro}\n\n```cuda\n{code}```\n"


MEMCHECK_B = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at {sig}+0x2f0 in /tmp/beaver-gemm_tiled_bounds-k1x2/kernel.cu:16
=========     by thread (8,24,0) in block (31,62,0)
=========     Address 0x7f3a2fd09020 is out of bounds
=========     and is 4,128 bytes after the nearest allocation at 0x7f3a2f000000 of size 16,000,000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: launch_sgemm in /tmp/beaver-gemm_tiled_bounds-k1x2/kernel.cu:29 [0x9b4d] in test.out
=========         Host Frame: main in /tmp/beaver-gemm_tiled_bounds-k1x2/test_main.cu:41 [0x8a11] in test.out
=========
"""


def memcheck_records(line: int, n: int) -> tuple[list[SanitizerRecord], str]:
    recs, text = [], ""
    for i in range(n):
        thread = f"({i % 32},{24 + i // 32},0)"
        block = f"({31 - i % 2},62,0)"
        addr = f"0x{0x7F3A2FD09020 + 4 * i:x}"
        body = (
            f"========= Invalid __global__ read of size 4 bytes\n"
            f"=========     at {SIG}+0x2f0 in kernel.cu:{line}\n"
            f"=========     by thread {thread} in block {block}\n"
            f"=========     Address {addr} is out of bounds\n"
            f"=========     and is {4128 + 4 * i:,} bytes after the nearest allocation at 0x7f3a2f000000 of size 16,000,000 bytes\n"
            f"=========     Saved host backtrace up to driver entry point at kernel launch time\n"
            f"=========         Host Frame: launch_sgemm in kernel.cu:29 [0x9b4d] in test.out\n"
            "=========\n"
        )
        text += body
        recs.append(
            SanitizerRecord(
                tool="memcheck",
                kind="Invalid __global__ read",
                size=4,
                kernel=SIG,
                block=block,
                thread=thread,
                address=addr,
                detail=f"Address {addr} is out of bounds",
                host_frame="launch_sgemm in kernel.cu:29",
                text=body,
            )
        )
    return recs, text


def stage(kind: str, cmd: str, rc: int | None, dur: float, log: str, **kw: object) -> StageResult:
    return StageResult(
        stage=kind, command=cmd, rc=rc, duration_s=dur, log=log, log_bytes=len(log.encode()), **kw
    )  # type: ignore[arg-type]


IT3_BUILD_LOG = """kernel.cu(13): error: identifier "TILE_K" is undefined
      for (int t = 0; t < (K + TILE_K - 1) / TILE_K; ++t) {
                               ^

kernel.cu(24): error: expected a ";"
  }
  ^

2 errors detected in the compilation of "kernel.cu".
"""


def degenerate_session() -> tuple[SessionHeader, list[Event]]:
    """gpt-4.1 on gemm_tiled_bounds: OOB -> naive kernel at 0.08x (below gate) -> build error -> tiled 0.94x."""
    clock = Clock()
    rng = random.Random(4)
    proto = Protocol(budget=5, feedback="L3", history=2, temperature=0.0, gate=0.7, gate_mode="in_loop")
    hdr = header("d3g3n0a7", "gpt-4.1", proto, clock, run_id="demo")
    broken = src("broken")
    codes = {1: src("it1"), 2: src("it2"), 3: src("it3"), 4: src("it4")}
    intros = {
        1: "The loads of A run past the last column when K is not a multiple of 32. I guard the A load.",
        2: "The tiled kernel still reads out of bounds. A simpler kernel avoids the tile bookkeeping entirely: one thread per output element.",
        3: "Correct, but far too slow (0.08x). I restore the 32x32 shared-memory tiles and guard both loads.",
        4: "Fixed the undefined TILE_K (the tile is square, TILE) and the missing semicolon.",
    }
    ev: list[Event] = []
    prev = broken
    feedback = "The kernel fails with: an illegal memory access was encountered"
    for it in range(1, 5):
        code = codes[it]
        ev.append(
            Request(
                t=clock(),
                iteration=it,
                messages=[
                    Message(
                        role="system",
                        content="You repair broken CUDA kernels. Reply with the whole corrected kernel.cu in one ```cuda block.",
                    ),
                    Message(role="user", content=f"Task gemm_tiled_bounds, iteration {it}.\n{feedback}"),
                ],
            )
        )
        ev.append(
            Reply(
                t=clock(6.5),
                iteration=it,
                content=reply_text(intros[it], code),
                prompt_tokens=1800 + 420 * it,
                completion_tokens=760,
                latency_s=6.42,
                finish_reason="stop",
            )
        )
        ev.append(Candidate(t=clock(0.01), iteration=it, code=code, sha256=sha(code), diff=udiff(prev, code)))
        prev = code
        if it == 3:
            ev.append(
                Built(t=clock(3.1), iteration=it, result=stage("build", BUILD_CMD, 2, 3.08, IT3_BUILD_LOG))
            )
            ev.append(
                Verdict(
                    t=clock(0.01),
                    iteration=it,
                    category="buildability",
                    signature='kernel.cu(<N>): error: identifier "TILE_K" is undefined',
                    correct=False,
                    gate=0.7,
                    reason="buildability",
                    decisive=[
                        'kernel.cu(13): error: identifier "TILE_K" is undefined',
                        'kernel.cu(24): error: expected a ";"',
                    ],
                )
            )
            feedback = IT3_BUILD_LOG
            continue
        ev.append(Built(t=clock(4.2), iteration=it, result=stage("build", BUILD_CMD, 0, 4.17, "")))
        if it == 1:
            run_log = (
                "sgemm M=2000 N=2000 K=2000 seed=1780000005\n"
                "CUDA error cudaErrorIllegalAddress (an illegal memory access was encountered) after sgemm launch\n"
            )
            ev.append(Ran(t=clock(1.2), iteration=it, result=stage("run", TEST_CMD, 3, 1.21, run_log)))
            recs, text = memcheck_records(16, 3)
            text = "========= COMPUTE-SANITIZER\n" + text + "========= ERROR SUMMARY: 3 errors\n"
            ev.append(
                Sanitized(
                    t=clock(9.8),
                    iteration=it,
                    tool="memcheck",
                    result=stage(
                        "sanitize",
                        "compute-sanitizer --tool memcheck --print-limit 20 ./test.out",
                        3,
                        9.77,
                        text,
                    ),
                    records=recs,
                    error_count=3,
                )
            )
            ev.append(
                Verdict(
                    t=clock(0.01),
                    iteration=it,
                    category="illegal_memory_access",
                    signature="Invalid __global__ read of size <N> bytes at sgemm_tiled(...) in kernel.cu:<N>",
                    correct=False,
                    gate=0.7,
                    reason="illegal_memory_access",
                    decisive=[
                        "CUDA error cudaErrorIllegalAddress (an illegal memory access was encountered) after sgemm launch",
                        "========= Invalid __global__ read of size 4 bytes",
                    ],
                )
            )
            feedback = text
            continue
        run_log = f"sgemm M=2000 N=2000 K=2000 seed=1780000{it * 7:03d}\nOK C: 4000000 elements, max abs err 3.05e-05\nPASS\n"
        ev.append(Ran(t=clock(1.4), iteration=it, result=stage("run", TEST_CMD, 0, 1.38, run_log)))
        ev.append(
            Sanitized(
                t=clock(8.9),
                iteration=it,
                tool="racecheck",
                result=stage(
                    "sanitize",
                    "compute-sanitizer --tool racecheck ./test.out",
                    0,
                    8.91,
                    "========= COMPUTE-SANITIZER\nPASS\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
                ),
                records=[],
                error_count=0,
            )
        )
        tr = timing(rng, 10.151 if it == 2 else 0.864, 0.812)
        ev.append(Timed(t=clock(2.5), iteration=it, result=tr))
        ok = tr.speedup >= 0.7
        ev.append(
            Verdict(
                t=clock(0.01),
                iteration=it,
                category="passed",
                signature="",
                correct=True,
                speedup=tr.speedup,
                gate=0.7,
                success=ok,
                reason="passed" if ok else "below gate",
                decisive=[] if ok else [f"speedup {tr.speedup:.2f}x < gate 0.7x"],
            )
        )
        feedback = f"Correct but {tr.speedup:.2f}x the reference (gate 0.7x): candidate {tr.candidate_ms:.3f} ms, reference {tr.reference_ms:.3f} ms."
    best = max(v.speedup for v in ev if isinstance(v, Verdict) and v.speedup is not None)
    ev.append(SessionEnd(t=clock(0.1), stop_reason="passed", iterations=4, success=True, best_speedup=best))
    return hdr, ev


RACE_LOG = f"""========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at {SIG}+0x3a0 in kernel.cu:15
=========     and Read access at {SIG}+0x4c0 in kernel.cu:18 [6144 hazards]
=========
========= Error: Race reported between Read access at {SIG}+0x4c0 in kernel.cu:18
=========     and Write access at {SIG}+0x3a0 in kernel.cu:15 [6144 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""


def stuck_session() -> tuple[SessionHeader, list[Event]]:
    """qwen2.5-coder-32b on the same task: OOB, then a race it repeats verbatim (duplicate_code)."""
    clock = Clock(T0 + 5000)
    rng = random.Random(7)
    proto = Protocol(
        budget=5,
        feedback="L3",
        history=2,
        temperature=0.0,
        gate=0.7,
        gate_mode="in_loop",
        sanitize_tools=("racecheck",),
    )
    hdr = header("q7stuck01", "qwen2.5-coder-32b", proto, clock, run_id="demo")
    broken = src("broken")
    racy = src("it1").replace("        __syncthreads();\n#pragma unroll", "#pragma unroll", 1)
    racy = racy.replace(
        "B[(t * TILE + threadIdx.y) * N + col]",
        "((t * TILE + threadIdx.y) < K && col < N) ? B[(t * TILE + threadIdx.y) * N + col] : 0.0f",
    )
    codes = {1: src("it1"), 2: racy, 3: racy}
    ev: list[Event] = []
    prev = broken
    for it in (1, 2, 3):
        code = codes[it]
        ev.append(
            Request(t=clock(), iteration=it, messages=[Message(role="user", content=f"iteration {it}")])
        )
        ev.append(
            Reply(
                t=clock(9.0),
                iteration=it,
                content=reply_text("Here is the corrected kernel.", code),
                latency_s=8.9,
                finish_reason="stop",
            )
        )
        ev.append(Candidate(t=clock(0.01), iteration=it, code=code, sha256=sha(code), diff=udiff(prev, code)))
        prev = code
        ev.append(
            Built(t=clock(4.0), iteration=it, result=stage("build", BUILD_CMD, 0, 4.02, "", cached=it == 3))
        )
        if it == 1:
            run_log = "sgemm M=2000 N=2000 K=2000 seed=1780005011\nCUDA error cudaErrorIllegalAddress (an illegal memory access was encountered) after sgemm launch\n"
            ev.append(Ran(t=clock(1.2), iteration=it, result=stage("run", TEST_CMD, 3, 1.19, run_log)))
            recs, text = memcheck_records(16, 2)
            ev.append(
                Sanitized(
                    t=clock(9.0),
                    iteration=it,
                    tool="memcheck",
                    result=stage(
                        "sanitize",
                        "compute-sanitizer --tool memcheck ./test.out",
                        3,
                        9.1,
                        "========= COMPUTE-SANITIZER\n" + text + "========= ERROR SUMMARY: 2 errors\n",
                    ),
                    records=recs,
                    error_count=2,
                )
            )
            ev.append(
                Verdict(
                    t=clock(0.01),
                    iteration=it,
                    category="illegal_memory_access",
                    signature="Invalid __global__ read of size <N> bytes at sgemm_tiled(...) in kernel.cu:<N>",
                    correct=False,
                    reason="illegal_memory_access",
                    decisive=["========= Invalid __global__ read of size 4 bytes"],
                )
            )
            continue
        run_log = (
            f"sgemm M=2000 N=2000 K=2000 seed=17800050{it:02d}\n"
            "MISMATCH C at index 1931 (row 0, col 1931): got 3.80127 expected 4.12594 (abs err 0.325)\n"
            "FAILED C: 211 of 4000000 elements out of tolerance (atol 1.0e-03, rtol 1.0e-03); max abs err 0.912 at index 1999968\nFAIL\n"
        )
        ev.append(Ran(t=clock(1.3), iteration=it, result=stage("run", TEST_CMD, 1, 1.31, run_log)))
        recs = [
            SanitizerRecord(
                tool="racecheck",
                kind="Race reported",
                kernel=SIG,
                detail="Write access at kernel.cu:15 and Read access at kernel.cu:18 [6144 hazards]",
                text=RACE_LOG.split("=========\n")[0],
            ),
            SanitizerRecord(
                tool="racecheck",
                kind="Race reported",
                kernel=SIG,
                detail="Read access at kernel.cu:18 and Write access at kernel.cu:15 [6144 hazards]",
            ),
        ]
        ev.append(
            Sanitized(
                t=clock(11.0),
                iteration=it,
                tool="racecheck",
                result=stage("sanitize", "compute-sanitizer --tool racecheck ./test.out", 1, 10.95, RACE_LOG),
                records=recs,
                error_count=2,
            )
        )
        ev.append(
            Verdict(
                t=clock(0.01),
                iteration=it,
                category="functional_correctness",
                signature="MISMATCH C at index <N> (row <N>, col <N>): got <N> expected <N> (abs err <N>)",
                correct=False,
                reason="functional_correctness",
                decisive=[run_log.splitlines()[1], run_log.splitlines()[2]],
            )
        )
    ev.append(
        Stalled(t=clock(0.01), iteration=3, detector="duplicate_code", detail="same code as iteration 2")
    )
    ev.append(
        SessionEnd(t=clock(0.1), stop_reason="duplicate_code", iterations=3, success=False, best_speedup=None)
    )
    _ = rng
    return hdr, ev


def quick_session(
    task_id: str, model: str, session_id: str, speed: float, seed: int
) -> tuple[SessionHeader, list[Event]]:
    """A first-try pass (for the browser): the reference-like kernel built and timed once."""
    clock = Clock(T0 + 10000 + seed)
    rng = random.Random(seed)
    hdr = header(
        session_id,
        model,
        Protocol(budget=5, history=2, temperature=0.0, gate_mode="in_loop"),
        clock,
        run_id="demo",
    )
    hdr = hdr.model_copy(update={"task": hdr.task.model_copy(update={"id": task_id})})
    code = src("it4")
    tr = timing(rng, 0.812 / speed, 0.812)
    ev: list[Event] = [
        Request(t=clock(), iteration=1, messages=[Message(role="user", content="iteration 1")]),
        Reply(t=clock(5), iteration=1, content=reply_text("Guarded both loads.", code)),
        Candidate(t=clock(0.01), iteration=1, code=code, sha256=sha(code), diff=udiff(src("broken"), code)),
        Built(t=clock(4), iteration=1, result=stage("build", BUILD_CMD, 0, 4.1, "")),
        Ran(
            t=clock(1),
            iteration=1,
            result=stage("run", TEST_CMD, 0, 1.3, "OK C: 4000000 elements, max abs err 3.05e-05\nPASS\n"),
        ),
        Timed(t=clock(2), iteration=1, result=tr),
        Verdict(
            t=clock(0.01),
            iteration=1,
            category="passed",
            signature="",
            correct=True,
            speedup=tr.speedup,
            success=tr.speedup >= 0.7,
            reason="passed" if tr.speedup >= 0.7 else "below gate",
        ),
    ]
    ok = tr.speedup >= 0.7
    ev.append(
        SessionEnd(
            t=clock(0.1),
            stop_reason="passed" if ok else "budget",
            iterations=1,
            success=ok,
            best_speedup=tr.speedup,
        )
    )
    return hdr, ev


def write(path: Path, hdr: SessionHeader, events: list[Event]) -> Path:
    from beavertui.engine.session.store import SessionWriter

    if path.exists():
        path.unlink()
    with SessionWriter(path, hdr) as w:
        for e in events:
            w.append(e)
    return path


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    deg = write(OUT / "degenerate.jsonl", *degenerate_session())
    write(OUT / "stuck.jsonl", *stuck_session())
    write(OUT / "quick.jsonl", *quick_session("gemm_tiled_bounds", "claude-sonnet-4", "c1aude01", 0.97, 11))
    lines = deg.read_text().splitlines(True)
    # A run killed mid-write: the last line is cut half-way.
    (OUT / "damaged.jsonl").write_text("".join(lines[:12]) + lines[12][: len(lines[12]) // 2])


if __name__ == "__main__":
    main()
