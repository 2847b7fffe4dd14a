#!/usr/bin/env python3
"""First paint of `beavertui replay` on the worst session files the session reader accepts.

    python3 bench/tui_first_paint_bench.py [--repeat 3] [--cases typical,largest,...] [--keep DIR]

Each case is a session file built from the bundled demo session (sessions/demo/degenerate_repair.jsonl)
and checked to be accepted whole by the plain reader (`read_session`: a header, no problem), up to the
reader's bound of 64 MiB: the largest file; one huge event (a run log, a candidate, a reply, a header's
sources); 100,000 small events and as many tiny ones as fit; very long lines; a sanitizer run with
hundreds of thousands of findings; millions of timing samples. The huge part is always at the last
iteration, which is the one the screen opens on.

Each run starts `python -m beavertui replay FILE` in a pseudo-terminal of 120x40, as a user would in a real
terminal, and reads what the app writes to it. "First paint" is the time from just before the process is
started until the terminal has received the session screen's header bar ("· iteration "); "loaded" until
it shows the session's end ("ended: "), which appears once every event is folded. Interpreter start and
imports count; beside it, the CPU seconds the child had used by then (less sensitive to other jobs on the
machine than the wall clock). Peak memory is the child's VmHWM just before it is told to quit. The median
of --repeat runs is printed per case, with the load average before the case.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "sessions" / "demo" / "degenerate_repair.jsonl"
COLS, ROWS = 120, 40
PAINTED, LOADED = b"\xc2\xb7 iteration ", b"ended: "
LIMIT = 64 << 20
"""The reader's bound (MAX_SESSION_BYTES); each case stays just under it where it is meant to be large."""
ROOM = LIMIT - (256 << 10)


# ------------------------------------------------------------------ building the cases


def demo() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DEMO.read_text().splitlines()]


def write(path: Path, objs: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for obj in objs:
            fh.write(json.dumps(obj, separators=(",", ":")) + "\n")


def last_of(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(o for o in reversed(objs) if o.get("kind") == kind)


def fill(size: int, line: str) -> str:
    """Text that takes about ``size`` bytes in a JSON line, made of ``line`` repeated."""
    return line * (size // (len(json.dumps(line)) - 2))


def case_typical(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return objs


def case_largest(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """100 iterations (the largest budget), each with a 100 KB reply, a 2,500-line candidate and a 400 KB
    run log, to just under the reader's bound."""
    header, body, end = objs[0], objs[1:-1], objs[-1]
    header["protocol"]["budget"] = 100
    first = [o for o in body if o.get("iteration") == 1]
    timing = last_of(body, "timing")
    code = "".join(
        f"    acc += a[{i}] * b[{i}];  // unrolled step {i} of the tile loop\n" for i in range(2500)
    )
    out = [header]
    per = ROOM // 100
    for it in range(1, 101):
        for o in [*first, timing]:
            o = json.loads(json.dumps(o))
            o["iteration"] = it
            if o["kind"] == "reply":
                o["content"] = "```cuda\n" + code[:100_000] + "```\n"
            if o["kind"] == "candidate":
                o["code"], o["sha256"] = code + f"// {it}\n", f"{it:064x}"
            out.append(o)
        run, line = last_of(out, "run"), f"step {it}: max abs err 0.0 ok\n"
        used = sum(len(json.dumps(o, separators=(",", ":"))) + 1 for o in out[-len(first) - 1 :])
        run["result"]["log"] = fill(max(0, per - used), line)
    end["iterations"] = 100
    return [*out, end]


def case_huge_log(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run event whose log is 63 MiB of 80-character lines."""
    last_of(objs, "run")["result"]["log"] = fill(ROOM, "x" * 79 + "\n")
    return objs


def case_huge_log_one_line(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run event whose log is a single line of 63 MiB (no newline)."""
    last_of(objs, "run")["result"]["log"] = "y" * ROOM
    return objs


def case_huge_candidate(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A candidate of 63 MiB (1.6 million lines)."""
    last_of(objs, "candidate")["code"] = fill(ROOM, "    int v = threadIdx.x * 4 + 1;   // pad\n")
    return objs


def case_long_code_lines(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A candidate of 200 lines of 300,000 characters each."""
    last_of(objs, "candidate")["code"] = fill(ROOM, "x = 1; " * 43_000 + "\n")
    return objs


def case_huge_reply(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A reply of 63 MiB from which no code was extracted (the diff pane shows the reply)."""
    last_of(objs, "reply")["content"] = fill(ROOM, "I think the kernel is fine as it is. " * 2 + "\n")
    cand = last_of(objs, "candidate")
    cand.update(code=None, sha256=None, no_code_reason="no code block in the reply")
    return objs


def case_huge_header(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The largest header the reader accepts (store.MAX_HEADER_CHARS): a broken start and a reference of
    almost 8 MiB each (the diff pane compares with them)."""
    from beavertui.engine.session.store import MAX_HEADER_CHARS

    half = min(ROOM, MAX_HEADER_CHARS - (1 << 16)) // 2
    task = objs[0]["task"]
    task["broken_start"] = fill(half, "    float t = a[i] * b[i];  // broken\n")
    task["reference"] = fill(half, "    float t = a[i] * b[i];  // reference\n")
    return objs


def _many(objs: list[dict[str, Any]], n: int, make: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    """``n`` events from ``make`` inserted before the last iteration's verdict."""
    verdict = objs.index(last_of(objs, "verdict"))
    return [*objs[:verdict], *(make(i) for i in range(n)), *objs[verdict:]]


def case_sanitize_100k(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """100,000 small sanitizer events on the last iteration."""
    it = last_of(objs, "verdict")["iteration"]
    result = {"stage": "sanitize", "command": "compute-sanitizer ./t", "rc": 0, "log": "ok\n"}
    return _many(objs, 100_000, lambda i: {"kind": "sanitize", "iteration": it, "tool": "memcheck",
                                           "result": result, "records": [], "error_count": 0})  # fmt: skip


def case_stalls_100k(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """100,000 stagnation events on the last iteration."""
    it = last_of(objs, "verdict")["iteration"]
    return _many(objs, 100_000, lambda i: {"kind": "stalled", "iteration": it, "detector": "duplicate_code",
                                           "detail": f"same as iteration {i % 3 + 1}"})  # fmt: skip


def case_infra_100k(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """100,000 infrastructure errors on the last iteration."""
    it = last_of(objs, "verdict")["iteration"]
    return _many(objs, 100_000, lambda i: {"kind": "infra_error", "iteration": it, "source": "endpoint",
                                           "detail": f"HTTP 503 on try {i}"})  # fmt: skip


def case_tiny_events_max(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As many of the smallest events the reader accepts as fit (reply pieces of one character, about
    1.3 million), on the last iteration."""
    it = last_of(objs, "verdict")["iteration"]
    line = len(json.dumps({"kind": "reply_delta", "iteration": it, "text": "x"}, separators=(",", ":"))) + 1
    n = (ROOM - sum(len(json.dumps(o)) + 1 for o in objs)) // line
    return _many(objs, n, lambda i: {"kind": "reply_delta", "iteration": it, "text": "x"})


def case_sanitizer_records(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One sanitizer run with 400,000 findings of 10,000 different kinds."""
    san = last_of(objs, "sanitize") if any(o.get("kind") == "sanitize" and o["iteration"] == 4 for o in objs) \
        else None  # fmt: skip
    if san is None:
        san = json.loads(json.dumps(last_of(objs, "sanitize")))
        san["iteration"] = last_of(objs, "verdict")["iteration"]
        objs.insert(objs.index(last_of(objs, "verdict")), san)
    san["records"] = [
        {"tool": "memcheck", "kind": f"Invalid __global__ read #{i % 10_000}", "size": 4, "kernel": "k",
         "thread": f"({i % 256},0,0)", "block": "(0,0,0)", "address": hex(i), "detail": f"at {i}"}
        for i in range(400_000)
    ]  # fmt: skip
    san["error_count"] = 400_000
    return objs


def case_timing_samples(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A timing with 3 million samples a side (and as many host samples)."""
    res = last_of(objs, "timing")["result"]
    n = 1_500_000
    res["candidate_samples"] = res["candidate_host_samples"] = [
        round(0.1 + (i % 97) / 1e4, 4) for i in range(n)
    ]
    res["reference_samples"] = res["reference_host_samples"] = [
        round(0.1 + (i % 89) / 1e4, 4) for i in range(n)
    ]
    return objs


def case_huge_verdict(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A verdict with a 16 MiB reason and signature, 200,000 decisive lines and 200,000 flags."""
    v = last_of(objs, "verdict")
    v["reason"] = "r" * (16 << 20)
    v["signature"] = "s" * (16 << 20)
    v["decisive"] = [f"error at line {i}" for i in range(200_000)]
    v["flags"] = [f"flag_{i}: evidence {i}" for i in range(200_000)]
    return objs


CASES: dict[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {
    "typical": case_typical,
    "largest": case_largest,
    "huge_log": case_huge_log,
    "huge_log_one_line": case_huge_log_one_line,
    "huge_candidate": case_huge_candidate,
    "long_code_lines": case_long_code_lines,
    "huge_reply": case_huge_reply,
    "huge_header": case_huge_header,
    "sanitize_100k": case_sanitize_100k,
    "stalls_100k": case_stalls_100k,
    "infra_100k": case_infra_100k,
    "tiny_events_max": case_tiny_events_max,
    "sanitizer_records": case_sanitizer_records,
    "timing_samples": case_timing_samples,
    "huge_verdict": case_huge_verdict,
}


def build(name: str, folder: Path) -> tuple[Path, dict[str, Any]]:
    """The case's file and what the reader makes of it (size, lines, accepted whole or not)."""
    sys.path.insert(0, str(ROOT))
    from beavertui.engine.session.store import read_session

    path = folder / f"{name}.jsonl"
    if not path.exists():
        write(path, CASES[name](demo()))
        if path.stat().st_size > LIMIT:
            raise SystemExit(f"{path}: the case came out larger than the reader's bound; fix its builder")
    t = time.perf_counter()
    header, events, problem = read_session(path)
    info = {
        "bytes": path.stat().st_size,
        "events": len(events),
        "accepted": header is not None and problem is None,
        "problem": problem,
        "read_session_s": round(time.perf_counter() - t, 3),
    }
    del header, events
    return path, info


# ------------------------------------------------------------------ a real terminal


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def cpu_s(pid: int) -> float | None:
    """CPU seconds the process has used so far (user and system, every thread)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def replay_in_pty(path: Path, timeout: float = 60.0) -> dict[str, float | None]:
    """Run ``beavertui replay PATH`` in a pseudo-terminal; seconds to first paint and to loaded."""
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS), PYTHONPATH=str(ROOT))
    t0 = time.time()
    pid, fd = pty.fork()
    if pid == 0:  # the child: the replay command, its terminal this pseudo-terminal
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
            os.execve(sys.executable, [sys.executable, "-m", "beavertui", "replay", str(path)], env)
        finally:
            os._exit(127)
    out: dict[str, float | None] = {"first_paint_s": None, "loaded_s": None}
    tail = b""
    try:
        while time.time() - t0 < timeout and out["loaded_s"] is None:
            ready, _, _ = select.select([fd], [], [], 0.02)
            if not ready:
                continue
            try:
                data = os.read(fd, 1 << 20)
            except OSError:
                break
            if not data:
                break
            now = time.time() - t0
            tail = tail[-64:] + data
            if out["first_paint_s"] is None and PAINTED in tail:
                out["first_paint_s"], out["first_paint_cpu_s"] = now, cpu_s(pid)
            if out["first_paint_s"] is not None and LOADED in tail:
                out["loaded_s"] = now
        out["peak_rss_mb"] = peak_rss_mb(pid)
        os.write(fd, b"q")
        deadline = time.time() + 10
        while time.time() < deadline:
            if os.waitpid(pid, os.WNOHANG)[0]:
                pid = 0
                break
            if select.select([fd], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):
                    os.read(fd, 1 << 20)
        out["quit_ok"] = float(pid == 0)
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    return out


def median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.median(got), 3) if len(got) == len(values) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (the median is printed)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--keep", type=Path, help="build the files in this folder and keep them (reused)")
    args = ap.parse_args()
    names = [n for n in args.cases.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        results: dict[str, Any] = {"cpus": os.cpu_count(), "terminal": f"{COLS}x{ROWS}"}
        print(
            f"{'case':<20} {'MiB':>6} {'events':>9} {'first paint s':>14} {'(CPU s)':>8} {'loaded s':>9} "
            f"{'peak MB':>8}  load"
        )
        for name in names:
            path, info = build(name, folder)
            load = os.getloadavg()[0]
            runs = [replay_in_pty(path) for _ in range(args.repeat)]
            row = {
                **info,
                "load_average_1m": round(load, 2),
                "first_paint_s": median([r["first_paint_s"] for r in runs]),
                "first_paint_runs_s": [r["first_paint_s"] and round(r["first_paint_s"], 3) for r in runs],
                "first_paint_cpu_s": median([r.get("first_paint_cpu_s") for r in runs]),
                "loaded_s": median([r["loaded_s"] for r in runs]),
                "peak_rss_mb": median([r.get("peak_rss_mb") for r in runs]),
                "quit_ok": all(r.get("quit_ok") for r in runs),
            }
            results[name] = row
            fp, cpu, ld = row["first_paint_s"], row["first_paint_cpu_s"], row["loaded_s"]
            mb = row["peak_rss_mb"]
            print(
                f"{name:<20} {info['bytes'] / (1 << 20):6.1f} {info['events']:>9,} "
                f"{'-' if fp is None else f'{fp:.2f}':>14} {'-' if cpu is None else f'{cpu:.2f}':>8} "
                f"{'-' if ld is None else f'{ld:.2f}':>9} "
                f"{'-' if mb is None else f'{mb:.0f}':>8}  {load:.2f}"
                + ("" if info["accepted"] else f"  (not accepted: {info['problem']})"),
                flush=True,
            )
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
