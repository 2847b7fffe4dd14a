"""Make the package's known set of the CUDABeaver release on the H200 (beavertui/engine/corpus/known/).

    python3 scripts/release_known_set.py RELEASE [ARCHIVE ...] > beavertui/engine/corpus/known/SLUG.json

RELEASE: the release's data/ and harness/ (e.g. exported from its git repository). The verdicts are those of
its validation on the H200 (docs/data/h200-2026-12-01/release-verdicts.tar.gz); a record is kept only while
it still describes the task as the release ships it now (its reference, harness and broken-start hashes),
so tasks whose harness changed since (the cutlass family's) are left out and validated again on a GPU.
Each kept record gets the reference's run time: the largest wall time of a correctness run of the family's
reference submission in the recorded runs of the release on the H200 (ARCHIVE: run directories packed as
.tar.gz or .tgz; by default the release batches under tests/data and docs/data), runs made again from a
stored check not counted. A task whose reference never ran in them has none (its runs keep the flat limit).
"""

from __future__ import annotations

import json
import sys
import tarfile
import tempfile
from pathlib import Path

from beavertui.engine.code.hashing import code_hash
from beavertui.engine.corpus import families, verdicts
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Candidate, Ran
from beavertui.engine.session.store import read_session

ROOT = Path(__file__).resolve().parents[1]
GPU = "nvidia_h200_sm_90_cuda_13_0"
VERDICTS = ROOT / "docs" / "data" / "h200-2026-12-01" / "release-verdicts.tar.gz"
ARCHIVES = (
    *sorted((ROOT / "tests" / "data").glob("release_*.tar.gz")),
    *sorted((ROOT / "docs" / "data").glob("h200-*/*/batch-out.tgz")),
)


def reference_runs(release: Path, archives: list[Path]) -> dict[str, float]:
    """Task id -> the largest wall time (s) of its reference submission's own correctness run on the H200."""
    corpus = load_corpus(release)
    by_id = {t.id: t for t in corpus.tasks}
    wanted = {}
    for t in corpus.tasks:
        code = families.reference_submission(t)
        if code is not None:
            wanted[t.id] = code_hash(code, t.language)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, archive in enumerate(archives):
            where = Path(tmp) / str(n)
            with tarfile.open(archive) as tar:
                tar.extractall(where, filter="data")
            for path in where.rglob("*__s*.jsonl"):
                header, events, _problem = read_session(path)
                if header is None or header.gpu is None or header.gpu.slug != GPU:
                    continue
                task = by_id.get(header.task.id)
                if task is None or header.task.harness_hash != task.harness_hash():
                    continue
                shas = {}
                for e in events:
                    if isinstance(e, Candidate):
                        shas[e.iteration] = e.sha256
                    elif (
                        isinstance(e, Ran)
                        and shas.get(e.iteration) == wanted.get(task.id)
                        and e.result.reused is None
                        and e.result.rc == 0
                        and not e.result.timed_out
                        and e.result.duration_s is not None
                    ):
                        out[task.id] = max(out.get(task.id, 0.0), e.result.duration_s)
    return out


def main() -> int:
    release = Path(sys.argv[1])
    archives = [Path(a) for a in sys.argv[2:]] or list(ARCHIVES)
    corpus = load_corpus(release)
    runs = reference_runs(release, archives)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(VERDICTS) as tar:
            tar.extractall(tmp, filter="data")
        for task in corpus.tasks:
            rec = verdicts.load(task, GPU, Path(tmp), known=False)
            if rec is None:
                print(f"left out (no record, or the task changed since): {task.id}", file=sys.stderr)
                continue
            rec = rec.model_copy(update={"reference_run_s": runs.get(task.id)})
            records.append(rec.model_dump(mode="json", exclude={"known"}))
    print(
        f"{len(records)} records, {sum(1 for r in records if r['reference_run_s'])} with a run time",
        file=sys.stderr,
    )
    # one record a line, so that a change reads as a change of its task's line
    print("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in records) + "\n]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
