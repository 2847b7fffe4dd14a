"""The figures of docs/analysis.md's minimal fixes of the release, from one GPU's store folder.

Reads ``<store>/<gpu>/minimal_fixes.json`` (written by ``beavertui corpus minimize``) and prints Markdown:
how many of the instances (those of ``--tasks``, default every entry) have a verified minimal fix, the other
outcomes with their counts, the median size of a fix in lines (lines removed from the broken start plus lines
added from the reference) against the median size of the whole reference diff, and one row per instance
(its oracle answers: the distinct candidates judged over every run of the search).

    python3 scripts/minimal_fixes_figures.py STORE/GPU [--tasks bench/release-cupti-tasks.txt] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def _ids(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [s for s in (line.split("#")[0].strip() for line in lines) if s]


def figures(record: dict[str, object], tasks: list[str]) -> dict[str, object]:
    entries = record.get("tasks", {})
    assert isinstance(entries, dict)
    rows = {t: entries.get(t) for t in tasks}
    fixed = [e for e in rows.values() if isinstance(e, dict) and e.get("verified") is True]
    counts: dict[str, int] = {}
    for e in rows.values():
        key = "not searched yet" if not isinstance(e, dict) else str(e.get("status"))
        counts[key] = counts.get(key, 0) + 1
    ratio = [e["lines"] / e["reference_lines"] for e in fixed if e.get("reference_lines")]
    return {
        "instances": len(tasks),
        "verified": len(fixed),
        "share": len(fixed) / len(tasks) if tasks else None,
        "by_minimality": {m: sum(e.get("minimality") == m for e in fixed) for m in ("lines", "hunks")},
        "statuses": counts,
        "median_fix_lines": statistics.median(e["lines"] for e in fixed) if fixed else None,
        "median_reference_lines": statistics.median(e["reference_lines"] for e in fixed) if fixed else None,
        "median_share_of_reference": statistics.median(ratio) if ratio else None,
        "oracle_answers": sum(int(e.get("asked", 0)) for e in rows.values() if isinstance(e, dict)),
        "rows": rows,
    }


def markdown(f: dict[str, object], gpu: str) -> str:
    out = [
        f"Minimal fixes on {gpu}: {f['verified']} of {f['instances']} instances verified"
        + (f" ({100 * f['share']:.0f}%)" if f["share"] is not None else "")  # type: ignore[operator]
        + f"; 1-minimal over lines: {f['by_minimality']['lines']}, over hunks only: {f['by_minimality']['hunks']}.",  # type: ignore[index]
        "",
    ]
    if f["median_fix_lines"] is not None:
        out += [
            f"Median size of a verified fix: {f['median_fix_lines']:g} lines, against {f['median_reference_lines']:g} "
            f"lines of the whole reference diff of the same instances (median share {100 * f['median_share_of_reference']:.0f}%; "  # type: ignore[operator]
            "a line is one removed from the broken start or one added from the reference).",
            "",
        ]
    statuses = f["statuses"]
    assert isinstance(statuses, dict)
    out += ["| outcome | instances |", "|---|---|"]
    out += [f"| {k.replace('_', ' ')} | {v} |" for k, v in sorted(statuses.items())]
    out += [
        "",
        "| instance | outcome | fix lines | reference lines | hunks | speedup | oracle answers |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = f["rows"]
    assert isinstance(rows, dict)
    for t, e in rows.items():
        if not isinstance(e, dict):
            out.append(f"| {t} | not searched yet | | | | | |")
            continue
        state = str(e["status"]) + (" (verified)" if e.get("verified") else "")
        sp = "" if e.get("speedup") is None else f"{e['speedup']:.3f}x"
        out.append(
            f"| {t} | {state} | {e.get('lines') if e.get('lines') is not None else ''} | {e['reference_lines']} | "
            f"{e.get('hunks') if e.get('hunks') is not None else ''}/{e['reference_hunks']} | {sp} | {e.get('asked', '')} |"
        )
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a store's GPU folder (holding minimal_fixes.json)")
    ap.add_argument("--tasks", type=Path, default=None, help="the instances counted, one id a line")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        record = json.loads((args.folder / "minimal_fixes.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(
            f"minimal_fixes_figures: {args.folder}: no readable minimal_fixes.json ({exc})", file=sys.stderr
        )
        return 2
    tasks = _ids(args.tasks) if args.tasks else sorted(record.get("tasks", {}))
    f = figures(record, tasks)
    if args.json:
        print(json.dumps({k: v for k, v in f.items() if k != "rows"}))
    else:
        print(markdown(f, args.folder.name), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
