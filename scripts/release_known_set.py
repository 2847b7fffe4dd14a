"""Make the package's known set of the CUDABeaver release on one GPU (beavertui/engine/corpus/known/SLUG.json).

    python3 scripts/release_known_set.py RELEASE [ARCHIVE ...] > beavertui/engine/corpus/known/SLUG.json
    python3 scripts/release_known_set.py RELEASE [ARCHIVE ...] --gpu SLUG --verdicts SOURCE [--verdicts ...] \
        > beavertui/engine/corpus/known/SLUG.json

RELEASE: the release's data/ and harness/ (e.g. exported from its git repository). --gpu: the GPU signature
slug (default the H200's, nvidia_h200_sm_90_cuda_13_0). --verdicts: where the stored verdicts on that GPU
are, a .tar.gz/.tgz or a folder holding a ``SLUG/`` folder of ``TASK.json`` records at any depth (a machine's
``<cache>/validation``, or the verdict folder a batch packs); by default the release's validation on the H200
(docs/data/h200-2026-12-01/release-verdicts.tar.gz). A task with records in several sources keeps the one
measured last. A record is kept only while it still describes the task as the release ships it now (its
reference, harness and broken-start hashes), so tasks whose harness changed since (the cutlass family's) are
left out and validated again on a GPU; a task with no record is left out too, and a batch on that GPU
validates it on the run as before, so a set may be partial.
A record that carries the reference's run time (a batch's own check stores it) keeps it. The others get the
largest wall time of a correctness run of the family's reference submission in the recorded runs of the
release on that GPU (ARCHIVE: run directories packed as .tar.gz or .tgz; by default the release batches under
tests/data and docs/data), runs made again from a stored check not counted. A task whose reference never ran
in them has none (its runs keep the flat limit).
"""

from __future__ import annotations

import argparse
import json
import shutil
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


def reference_runs(release: Path, archives: list[Path], gpu: str = GPU) -> dict[str, float]:
    """Task id -> the largest wall time (s) of its reference submission's own correctness run on ``gpu``."""
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
                if header is None or header.gpu is None or header.gpu.slug != gpu:
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


def gather(sources: list[Path], gpu: str, into: Path) -> int:
    """Copy the records on ``gpu`` found in ``sources`` into ``into/validation/<gpu>/`` (a cache that
    verdicts.load reads), the one measured last where a task has several; how many tasks have one."""
    best: dict[str, tuple[float, Path]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, source in enumerate(sources):
            where = source
            if source.is_file():
                where = Path(tmp) / str(n)
                with tarfile.open(source) as tar:
                    tar.extractall(where, filter="data")
            for folder in sorted(p for p in where.rglob(gpu) if p.is_dir()):
                for path in sorted(folder.glob("*.json")):
                    try:
                        rec = verdicts.VerdictRecord.model_validate_json(path.read_text(encoding="utf-8"))
                    except ValueError as exc:
                        print(f"not a verdict record, left out: {path.name} ({exc})", file=sys.stderr)
                        continue
                    if rec.gpu != gpu or path.stem != rec.task_id:
                        print(f"a record of another GPU or task, left out: {path.name}", file=sys.stderr)
                        continue
                    if rec.task_id not in best or rec.measured_at >= best[rec.task_id][0]:
                        best[rec.task_id] = (rec.measured_at, path)
        dest = verdicts.folder(gpu, into)
        dest.mkdir(parents=True)
        for task_id, (_at, path) in best.items():
            shutil.copyfile(path, dest / f"{task_id}.json")
    return len(best)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("release", type=Path, help="the release's data/ (with its harness)")
    ap.add_argument("archives", type=Path, nargs="*", help="recorded runs (.tar.gz/.tgz) for the run times")
    ap.add_argument("--gpu", default=GPU, help=f"GPU signature slug (default {GPU})")
    ap.add_argument(
        "--verdicts",
        type=Path,
        action="append",
        help="a .tar.gz/.tgz or folder holding <gpu slug>/*.json (repeatable; default the H200's validation)",
    )
    args = ap.parse_args(argv)
    sources = args.verdicts or [VERDICTS]
    for p in (args.release, *sources, *args.archives):
        if not p.exists():
            ap.error(f"no such file or folder: {p}")
    archives = list(args.archives) or list(ARCHIVES)
    corpus = load_corpus(args.release)
    runs = reference_runs(args.release, archives, args.gpu)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        if not gather(sources, args.gpu, Path(tmp)):
            ap.error(f"no verdict records of {args.gpu} in {', '.join(map(str, sources))}")
        for task in corpus.tasks:
            rec = verdicts.load(task, args.gpu, Path(tmp), known=False)
            if rec is None:
                print(f"left out (no record, or the task changed since): {task.id}", file=sys.stderr)
                continue
            if rec.reference_run_s is None:
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
