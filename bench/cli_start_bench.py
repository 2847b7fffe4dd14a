"""CPU time of ``python3 -m beavertui <command>`` for the commands the test suite starts most, and which heavy
libraries each loads.

Each command runs ``--repeat`` times in a fresh interpreter (the tree's own package first on ``PYTHONPATH``);
the figure is the median of the child's user + system CPU time (``os.wait4``), so other load on the machine
does not count, beside the exit statuses seen (0, or 1 where the command reports a failed repair). One more run under ``-X importtime`` says which of the watched libraries (scipy, numpy,
pydantic, textual, rich, openai) the command imported. The inputs are the repository's own: the demo
sessions, the recorded corpus and its recorded toolchain, the recorded GPU logs.

    python3 bench/cli_start_bench.py [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "recorded"
TOOLCHAIN = f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}"
WATCHED = ("scipy", "numpy", "pydantic", "textual", "rich", "openai")


def commands(tmp: Path) -> dict[str, list[str]]:
    run = tmp / "runs"
    return {
        "--help": ["--help"],
        "corpus list": ["corpus", "list"],
        "classify LOGS": ["classify", str(ROOT / "tests" / "data" / "logs" / "gpu_cases.jsonl")],
        "replay SESSION": ["replay", str(ROOT / "sessions" / "demo" / "repair_in_three.jsonl")],
        "live (recorded)": ["live", "--task", "vec_scale", "--corpus", str(RECORDED), "--model",
                            "scripted:vec_scale_demo.toml", "--toolchain", TOOLCHAIN, "--headless",
                            "--sessions-dir", str(tmp / "live"), "--budget", "3"],
        "batch (recorded)": ["batch", "--corpus", str(RECORDED), "--models", "scripted:vec_scale_demo.toml",
                             "--toolchain", TOOLCHAIN, "--sessions-dir", str(run), "--quiet", "--samples", "2"],
        "metrics RUN --json": ["metrics", str(run), "--json"],
        "metrics sessions/demo": ["metrics", str(ROOT / "sessions" / "demo")],
        "export sessions/demo": ["export", str(ROOT / "sessions" / "demo"), "-o", str(tmp / "demo.html")],
    }  # fmt: skip


def cpu_of(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """User + system CPU seconds of one run of the command, and its exit status."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(
            [sys.executable, "-m", "beavertui", *argv], stdout=null, stderr=null, env=env, cwd=cwd
        )
        _pid, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    return usage.ru_utime + usage.ru_stime, p.returncode


def loaded(argv: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """The watched libraries one run of the command imports (read from ``-X importtime``)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "beavertui", *argv],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
    )  # fmt: skip
    names = {
        line.rpartition("|")[2].strip() for line in p.stderr.splitlines() if line.startswith("import time:")
    }
    return [w for w in WATCHED if w in names]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each command (median reported) [5]")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, argv in commands(tmp).items():
            got = [cpu_of(argv, env, tmp) for _ in range(args.repeat)]
            runs = [cpu for cpu, _rc in got]
            rows.append({"command": name, "cpu_s": round(statistics.median(runs), 3), "min_s": round(min(runs), 3),
                         "exit": sorted({rc for _cpu, rc in got}), "loads": loaded(argv, env, tmp)})  # fmt: skip
    if args.json:
        print(
            json.dumps({"python": sys.version.split()[0], "repeat": args.repeat, "commands": rows}, indent=1)
        )
        return
    print(f"{'command':<24} {'CPU s (median)':>14} {'min':>6} {'exit':>5}  loads")
    for r in rows:
        status = ",".join(map(str, r["exit"]))
        print(
            f"{r['command']:<24} {r['cpu_s']:>14.2f} {r['min_s']:>6.2f} {status:>5}  {', '.join(r['loads']) or '-'}"
        )
    print(f"{'total':<24} {sum(r['cpu_s'] for r in rows):>14.2f}")


if __name__ == "__main__":
    main()
