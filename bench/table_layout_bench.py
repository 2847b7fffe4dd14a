"""Benchmark: laying out a report table of many rows, against writing the same table as JSON.

Two table shapes: the metrics command's main table with one row per model (13 columns, rates with their
intervals) and `corpus list`'s table of tasks (5 text columns). Each is laid out by the terminal fitter
(reports/fit.py, the same lines the command prints) at 80 and 200 columns, written as JSON
(reports/render.as_json), and printed by rich's own Table at 200 columns for comparison. Wall time of
each, in-process, best of ``--repeat`` runs. Usage:

    python3 bench/table_layout_bench.py [--models 3000] [--tasks 10000] [--repeat 3] [--rich]
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable

from beavertui.reports import fit, render
from beavertui.reports.cells import Rate, Table, pct


def models_table(n: int) -> Table:
    rows = []
    for i in range(n):
        v = (i % 97) / 100
        rate = Rate(v, max(0.0, v - 0.03), min(1.0, v + 0.03))
        rows.append(
            (
                f"vendor/model-{i:05d}-instruct",
                "iterative K5 L3 H2 T0 p0.7",
                "228",
                rate,
                rate,
                rate,
                rate,
                "no_progress (41%)",
                rate,
                rate,
                "0",
                str(i % 3),
                "under-sampled (n < K=5)" if i % 7 == 0 else "",
            )
        )
    cols = ("model", "protocol", "tasks", "pass@1", "pass@k", "debug@k", "stagnation", "dominant stall")
    cols += ("degenerate", "degenerate raw", "infra excl.", "flagged", "note")
    return Table("Repair rates per model and protocol", cols, tuple(rows), note="Percent of tasks.")


def corpus_table(n: int) -> Table:
    rows = [
        (
            f"task_{i:05d}",
            f"family_{i % 40}",
            "functional_correctness",
            "kernel.cu",
            "yes" if i % 5 else "no (1)",
        )
        for i in range(n)
    ]
    cols = ("id", "family", "label", "solution file", "runs here")
    return Table(f"corpus: {n} tasks", cols, tuple(rows), note="(1) needs sm_90", keys=1)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def rich_print(t: Table, width: int) -> None:
    """The table as rich's Table prints it (words fold when a column is too narrow)."""
    from rich.console import Console
    from rich.table import Table as RichTable

    rt = RichTable(title=t.title, caption=t.note or None)
    for i, c in enumerate(t.columns):
        numeric = any(isinstance(r[i], Rate) for r in t.rows)
        rt.add_column(c, justify="right" if numeric else "left", overflow="fold")
    for row in t.rows:
        rt.add_row(*(pct(c) if isinstance(c, Rate) else c for c in row))
    Console(file=io.StringIO(), width=width, color_system=None).print(rt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=3000)
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rich", action="store_true", help="also time rich's Table (slow at these sizes)")
    args = ap.parse_args()
    for name, table in (
        (f"metrics, {args.models} models", models_table(args.models)),
        (f"corpus list, {args.tasks} tasks", corpus_table(args.tasks)),
    ):
        cells = {
            "json": best(lambda t=table: render.as_json([t]), args.repeat),
            "fit 80 cols": best(lambda t=table: fit.lines(t, 80), args.repeat),
            "fit 200 cols": best(lambda t=table: fit.lines(t, 200), args.repeat),
        }
        if args.rich:
            cells["rich Table 200 cols"] = best(lambda t=table: rich_print(t, 200), 1)
        print(f"{name}: " + ", ".join(f"{k} {v:.3f} s" for k, v in cells.items()), flush=True)


if __name__ == "__main__":
    main()
