"""Store the verdicts of earlier `corpus validate --json` results that the verdict cache lacks.

    python3 scripts/release_store_verdicts.py CORPUS VALIDATE.jsonl GPU_SLUG

A GPU run keeps its results in validate.jsonl; when its stored verdicts did not come back with it, this
stores them again from those lines (the latest line of a task wins), for the tasks of CORPUS whose cache
entry is missing. Each record's reference, harness and broken-start hashes are taken from CORPUS as it is
now, so run it only over the same copy of the release that was validated. A note in each says so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from beavertui.engine.corpus import verdicts
from beavertui.engine.corpus.load import load_corpus


def main() -> int:
    root, results, gpu = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    rows: dict[str, dict[str, object]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "task_id" in doc:
            rows[str(doc["task_id"])] = doc
    corpus = load_corpus(root)
    stored = 0
    for task in corpus.tasks:
        doc = rows.get(task.id)
        if doc is None or (verdicts.folder(gpu) / f"{task.id}.json").exists():
            continue
        notes = [str(n) for n in doc.get("notes") or []]  # type: ignore[attr-defined]
        record = verdicts.VerdictRecord(
            task_id=task.id, gpu=gpu, verdict=str(doc["verdict"]), reason=str(doc["verdict_reason"]),
            label=str(doc["label"]), observed_category=doc.get("broken_category"),  # type: ignore[arg-type]
            evidence=doc.get("broken_signature"), family=str(doc.get("family") or ""),  # type: ignore[arg-type]
            reference_kind=str(doc.get("reference_kind") or "drop_in"),
            reference_ms=doc.get("reference_ms"), method=doc.get("method"),  # type: ignore[arg-type]
            notes=[*notes, f"stored again from {results.name}, the results of its validation run"],
        )  # fmt: skip
        verdicts.save(task, record)
        stored += 1
    print(f"{stored} verdicts stored again from {results} ({len(rows)} results)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
