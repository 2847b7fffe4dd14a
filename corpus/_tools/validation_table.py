#!/usr/bin/env python3
"""Render the output of `beavertui corpus validate --json` as a Markdown table (docs/corpus-validation.md).

    python3 corpus/_tools/validation_table.py VALIDATE.jsonl [--log VALIDATE.log] [--gpu TEXT] [--command TEXT]

Each row is one task as the validation saw it: the reference's category, the broken start's observed category
(and, for perf_broken starts, its interleaved speedup against the reference), whether that agrees with the
label, the reference's median time with its CV and timing method, and its achieved throughput against the
GPU's measured ceilings (the `ceilings on ...` line of the validation's progress log, when given).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def fmt_row(r: dict) -> list[str]:
    broken = r.get("broken_category") or ""
    if r.get("broken_speedup") is not None:
        broken += f" at {r['broken_speedup']:.2f}x"
    if not r.get("runnable"):
        return [r["task_id"], r["label"], f"not runnable: {r.get('reason')}", "", "", "", ""]
    t = ""
    if r.get("reference_ms") is not None:
        t = f"{r['reference_ms']:.4f} ms, CV {100 * (r.get('reference_cv') or 0):.2f}% ({r.get('method')})"
        if r.get("unstable"):
            t += ", unstable"
    thr = []
    if r.get("tflops") is not None:
        frac = r.get("tflops_fraction")
        thr.append(f"{r['tflops']:.1f} TFLOP/s" + (f" ({100 * frac:.0f}% of bf16 ceiling)" if frac else ""))
    if r.get("gbps") is not None:
        frac = r.get("gbps_fraction")
        thr.append(f"{r['gbps']:.0f} GB/s" + (f" ({100 * frac:.0f}% of copy ceiling)" if frac else ""))
    return [
        r["task_id"],
        r["label"],
        r.get("reference_category") or "",
        broken,
        "yes" if r.get("label_agrees") else "**no**",
        t,
        ", ".join(thr),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--log", type=Path, default=None, help="the validation's stderr (for the ceilings line)")
    ap.add_argument("--gpu", default=None, help="GPU description for the heading")
    ap.add_argument("--command", default="beavertui corpus validate --json", help="the command that ran")
    a = ap.parse_args()
    rows = []
    for line in a.results.read_text().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if "task_id" in obj:
            rows.append(obj)
    ceilings = None
    if a.log and a.log.is_file():
        m = re.search(r"^ceilings on .*$", a.log.read_text(), re.M)
        ceilings = m.group(0) if m else None
    valid = sum(1 for r in rows if r.get("valid"))
    out = [f"Command: `{a.command}`", ""]
    if a.gpu:
        out += [f"GPU: {a.gpu}", ""]
    if ceilings:
        out += [f"Measured ceilings: {ceilings.removeprefix('ceilings on ')}", ""]
    out += [f"**{valid} of {len(rows)} tasks valid.**", ""]
    head = ["task", "label", "reference", "broken start (observed)", "agrees", "reference time", "throughput"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for r in sorted(rows, key=lambda r: r["task_id"]):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in fmt_row(r)) + " |")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
