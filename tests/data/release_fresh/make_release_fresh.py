"""Make tests/data/release_fresh: eleven release instances and their outcomes on the H200, for a batch on a
fresh machine (no stored verdicts) to replay.

    python3 tests/data/release_fresh/make_release_fresh.py RELEASE

RELEASE: the CUDABeaver release's data/ (exported from its git repository; CC BY 4.0, see
tests/data/release_real/NOTICE). Writes ``release_fresh.tar.gz``: ``data/`` (the eleven task folders) and
``sessions/`` (recordings the recorded toolchain replays, their requests and replies left out):

- ten usable nvcc-family instances: their sessions of the finished scripted:@alternate batch
  (tests/data/release_batch_final.tar.gz) as they were recorded on the H200, the broken start at attempt 1
  and the reference submission at attempt 2;
- cuda_117, whose reference fails on the H200 (validated unusable on 2026-12-01: "the reference fails here:
  illegal_memory_access (memcheck: Invalid __shared__ read in k_nearestNeighbors)"). No session of it was
  kept (batches skipped it), so its session here is composed: its header as a batch writes it, and for both
  the broken start and the reference the outcome its validation recorded (category and signature), in the
  shape of cuda_122's real outcome under the same sanitizer harness; every composed stage says so in its log.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.code.hashing import code_hash

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
USABLE = (
    "cuda_59__logic_error__501f0dd2",
    "cuda_110__logic_error__957be815",
    "cuda_115__compile_error__778ab761",
    "cuda_123__logic_error__12ba71c9",
    "cuda_127__compile_error__a7b4a675",
    "cuda_142__compile_error__9f5657ee",
    "cuda_163__compile_error__c0e87d08",
    "cuda_189__compile_error__072121ef",
    "cusolver_17__compile_error__90110ffc",
    "cusparse_4__compile_error__cfcd99f6",
)
FAILING = "cuda_117__memory_crash__c2f7ebb0"
SHAPE = "cuda_122__memory_crash__5ace5f9e"
SIGNATURE = "memcheck: Invalid __shared__ read in k_nearestNeighbors"
COMPOSED = (
    "composed for a test from the H200 validation record of 2026-12-01 (category illegal_memory_access, "
    f"{SIGNATURE}); the raw log was not kept"
)


def _lines(archive: Path, name: str) -> list[dict[str, object]]:
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(f"/{name}__s0.jsonl"))
        fh = tar.extractfile(member)
        assert fh is not None
        return [json.loads(line) for line in io.TextIOWrapper(fh, encoding="utf-8") if line.strip()]


def _composed(release: Path) -> list[dict[str, object]]:
    """cuda_117's session: cuda_122's real lines with cuda_117's task, candidates and recorded outcome."""
    task = next(t for t in load_corpus(release.parent).tasks if t.id == FAILING)
    shape = _lines(ROOT / "tests" / "data" / "release_batch_final.tar.gz", SHAPE)
    out: list[dict[str, object]] = []
    codes = {1: task.broken_start(), 2: (task.reference_path or Path()).read_text(encoding="utf-8")}
    for line in shape:
        kind = line["kind"]
        if kind == "header":
            ref = task.ref().model_dump(mode="json")
            out.append({**line, "task": ref, "session_id": "composed117", "notes": COMPOSED})
        elif kind == "candidate":
            i = int(line["iteration"])  # type: ignore[call-overload]
            out.append({**line, "code": codes[i], "sha256": code_hash(codes[i], "cuda"), "diff": ""})
        elif kind in ("build", "run", "sanitize"):
            result = dict(line["result"])  # type: ignore[call-overload]
            if kind != "build":
                result.update(rc=99, log=f"({COMPOSED})\n", log_bytes=0)
            else:
                result.update(log=f"({COMPOSED})\n", log_bytes=0)
            out.append({**line, "result": result})
        elif kind == "verdict":
            out.append({
                **line, "category": "illegal_memory_access", "signature": SIGNATURE, "correct": False,
                "speedup": None, "success": False, "reason": "illegal_memory_access", "decisive": [COMPOSED],
            })  # fmt: skip
        elif kind == "end":
            out.append({**line, "stop_reason": "budget", "success": False, "best_speedup": None})
        elif kind in ("request", "reply"):
            continue  # the replay needs only the candidates and their outcomes
    return out


def main() -> int:
    release = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        data, sessions = Path(tmp) / "data", Path(tmp) / "sessions"
        sessions.mkdir()
        for name in (*USABLE, FAILING):
            shutil.copytree(release / name, data / name)
        for name in USABLE:
            lines = _lines(ROOT / "tests" / "data" / "release_batch_final.tar.gz", name)
            keep = [d for d in lines if d["kind"] not in ("request", "reply")]
            (sessions / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in keep), "utf-8")
        lines = _composed(release)
        (sessions / f"{FAILING}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines), "utf-8")
        with tarfile.open(HERE / "release_fresh.tar.gz", "w:gz") as tar:
            tar.add(data, arcname="data")
            tar.add(sessions, arcname="sessions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
