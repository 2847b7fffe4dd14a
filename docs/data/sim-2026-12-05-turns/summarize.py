"""The tables of docs/lab/sim-2026-12-05-turns.md from the raw outputs beside this file (or in a folder given).

python3 docs/data/sim-2026-12-05-turns/summarize.py [FOLDER]
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def runs(mode: str, side: str) -> list[dict]:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    return [json.loads(p.read_text()) for p in sorted(folder.glob(f"{mode}-{side}-*.json"))]


def w(x: dict, stage: str) -> str:
    s = x["wait_s"].get(stage)
    return f"{s['median_s']:6.1f} {s['max_s']:6.1f}" if s else "     -      -"


def row(label: str, x: dict, load: list[float]) -> str:
    switches = x.get("runs_to_timing", "-")
    line = (
        f"{label:24} {x['sim_wall_s']:8.1f} {x['gpu_busy']:5.3f} {switches:>4} {w(x, 'run')} {w(x, 'timing')}"
    )
    if "sessions" in x:
        s = x["sessions"]
        line += f" {s['loop_end_s']['median']:7.1f} {s['loop_end_s']['max']:7.1f} {s['final_median_s']:7.1f}"
        line += f" {s['longest_wait_without_timing_s']:6.1f}"
    return line + f"  load {load[0]:.1f}"


def main() -> int:
    head = f"{'':24} {'wall s':>8} {'busy':>5} {'r->t':>4} {'run wait med/max s':>13} {'timing wait med/max s':>13}"
    for mode in ("lane-fixture", "lane-h200"):
        print(f"\n{mode}: {head} loop end med/max s, final med s, longest wait without timing s")
        for design in ("inline", "lane"):
            for side in ("before", "after"):
                for i, d in enumerate(runs(mode, side), 1):
                    print(row(f"{design} {side} #{i}", d["result"][design], d["load"]))
    for mode, keys in (("simulate", ("40x5_1gpu",)), ("h200", ("40x5_1gpu",))):
        print(f"\n{mode}: {head}")
        for side in ("before", "after"):
            for i, d in enumerate(runs(mode, side), 1):
                r = d["result"]
                for k in keys:
                    print(row(f"scheduled {side} #{i}", r[k]["scheduled"], d["load"]))
                for g, x in r["gpus"].items():
                    print(row(f"  {g} GPUs {side} #{i}", x, d["load"]))
                if "with_early_stop" in r:
                    print(row(f"  early stop {side} #{i}", r["with_early_stop"]["scheduled"], d["load"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
