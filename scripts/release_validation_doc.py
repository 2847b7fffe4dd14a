"""Turn `corpus validate --json` output over the CUDABeaver release into docs/release-validation.md.

    python3 scripts/release_validation_doc.py VALIDATE.jsonl [MORE.jsonl ...] [--all IDS.txt] > docs/release-validation.md

Per instance: verdict, reason, observed category, reference time and method; per family: the counts. The
latest line of a task wins. With --all (one id per line), tasks without a result are listed as not validated.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

KINDS = ("usable", "usable_relabelled", "unusable")


def family_of(task_id: str, doc: dict[str, object] | None) -> str:
    fam = str(doc.get("family") or "") if doc else ""
    if fam:
        return fam
    head = task_id.split("__")[0]
    for known in ("cufft_samples", "flashattention", "layernorm", "thunderkittens", "kernelbench", "cudabench",
                  "cutlass", "cublas", "cufft", "cusolver", "cusparse", "cuda"):  # fmt: skip
        if head.startswith(known):
            return known
    return head.split("_")[0]


def cell(text: object) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")[:300]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--all", type=Path, help="every task id, one per line")
    args = ap.parse_args()
    docs: dict[str, dict[str, object]] = {}
    gpus: Counter[str] = Counter()
    for path in args.results:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict) and "task_id" in doc:
                docs[str(doc["task_id"])] = doc  # the latest result of a task stands
    for doc in docs.values():
        if doc.get("gpu"):
            gpus[str(doc["gpu"])] += 1
    listed = {t for t in (args.all.read_text().split() if args.all else []) if not t.startswith("_")}
    ids = sorted(set(docs) | listed)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    timed: Counter[str] = Counter()
    rows = []
    for tid in ids:
        doc = docs.get(tid)
        fam = family_of(tid, doc)
        kind = str(doc.get("verdict")) if doc else "not validated"
        counts[fam][kind] += 1
        if doc is None:
            rows.append(
                (
                    fam,
                    tid,
                    "",
                    "not validated",
                    "no result yet (run the validation again to continue)",
                    "",
                    "",
                )
            )
            continue
        ms = doc.get("reference_ms")
        ref = f"{ms:.4f} ms ({doc.get('method')})" if isinstance(ms, (int, float)) else ""
        if ref and doc.get("reference_measured_for"):
            ref += f", measured for {doc['reference_measured_for']} (same reference and harness)"
        if not ref:
            notes = [str(n) for n in doc.get("notes") or [] if "reference" in str(n)]  # type: ignore[union-attr]
            ref = notes[0] if notes else ""
        if (
            not ref
            and doc.get("reference_category") == "passed"
            and doc.get("reference_kind") in ("drop_in", "eager_model")
        ):
            ref = "not timed yet (checked by a run with --no-timing; --reuse-checks times it)"
        if isinstance(ms, (int, float)):
            timed[fam] += 1
        observed = doc.get("observed_category") or ""
        if doc.get("broken_signature") and kind == "usable_relabelled":
            observed = f"{observed}"
        rows.append(
            (
                fam,
                tid,
                str(doc.get("label")),
                kind,
                cell(doc.get("verdict_reason")),
                cell(observed),
                cell(ref),
            )
        )
    out = sys.stdout
    out.write("# The CUDABeaver release, validated\n\n")
    where = ", ".join(f"{g} ({n})" for g, n in gpus.most_common()) or "no GPU recorded"
    out.write(
        f"{len(docs)} of {len(ids)} instances validated with `beavertui corpus validate` on {where}. "
        "Verdicts: *usable* (the reference passes where the family has one, the broken start fails as labelled), "
        "*usable_relabelled* (the broken start fails, in another category than its label: the observed category "
        "is the corrected label), *unusable* (with the reason). Reference semantics per family: "
        "[release-families.md](release-families.md).\n\n"
    )
    out.write(
        "## Per family\n\n| family | instances | usable | usable, relabelled | unusable | not validated "
        "| reference timed |\n"
    )
    out.write("|---|---:|---:|---:|---:|---:|---:|\n")
    total: Counter[str] = Counter()
    for fam in sorted(counts):
        c = counts[fam]
        total.update(c)
        out.write(
            f"| {fam} | {sum(c.values())} | {c['usable']} | {c['usable_relabelled']} | {c['unusable']} | "
            f"{c['not validated']} | {timed[fam]} |\n"
        )
    out.write(
        f"| **all** | {sum(total.values())} | {total['usable']} | {total['usable_relabelled']} | "
        f"{total['unusable']} | {total['not validated']} | {sum(timed.values())} |\n\n"
    )
    out.write(
        "## Per instance\n\n| instance | label | verdict | reason | observed category | reference time (method) |\n"
    )
    out.write("|---|---|---|---|---|---|\n")
    for fam, tid, label, kind, reason, observed, ref in sorted(rows):
        del fam
        out.write(f"| {tid} | {label} | {kind} | {reason} | {observed} | {ref} |\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
