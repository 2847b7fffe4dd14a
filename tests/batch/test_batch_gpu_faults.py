"""A GPU that fails every run is blamed and taken out of the schedule; a candidate's own crash is not.

Sticky CUDA errors (an illegal memory access, an unspecified launch failure) leave the process's context
unusable and come either from the candidate or from a failing GPU. After each one a known-good probe
kernel runs on the same GPU: on this machine, which has no working GPU, the real probe (built with nvcc)
fails like the GPU would, so the GPU is blamed; with a probe that passes, the candidate keeps its verdict.
Runs here come from a task whose test command prints the driver's message, since no GPU can produce it.
When every GPU is gone, the batch stops with one clear line, exit code 3 (infrastructure), and leaves the
rest resumable.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.placement import scheduled_local
from beavertui.batch.rundir import read_manifest
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.errors import ToolchainError
from beavertui.engine.judge.gpu_fault import GpuProbe
from beavertui.engine.session.store import read_session
from beavertui.engine.toolchain.base import AttemptOptions
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"

needs_no_gpu = pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="needs nvcc (the probe kernel is built with it)"
)


def _no_gpu() -> None:
    from tests.conftest import gpu_present

    if gpu_present():
        pytest.skip("needs a machine without a working GPU (the probe must fail)")


def sticky_corpus(tmp: Path, message: str) -> Path:
    """vec_scale, but its test prints ``message`` as the CUDA runtime would and fails."""
    dst = tmp / "corpus" / "vec_scale"
    shutil.copytree(CORPUS / "vec_scale", dst)
    meta = json.loads((dst / "input.json").read_text())
    meta["build_command"] = "true"
    meta["test_command"] = f"sh -c \"echo 'CUDA error at test_main.cu:41: {message}' >&2; exit 1\""
    (dst / "input.json").write_text(json.dumps(meta))
    return dst.parent


STICKY = [
    "an illegal memory access was encountered",
    "unspecified launch failure",
    "misaligned address",
    "the launch timed out and was terminated",
]


@needs_no_gpu
@pytest.mark.parametrize("message", STICKY)
def test_a_sticky_error_that_the_probe_confirms_blames_the_gpu(tmp_path: Path, message: str) -> None:
    _no_gpu()
    task = load_corpus(sticky_corpus(tmp_path, message)).get("vec_scale")
    pool = GpuPool(["0"], fail_limit=2)
    tc = scheduled_local(pool, BuildSlots(1), None)
    code = task.reference() or ""
    for it in range(1, 3):
        with pytest.raises(ToolchainError) as info:
            list(tc.attempt(task, code, AttemptOptions(iteration=it)))
        assert info.value.source == "gpu"
        assert message in str(info.value) and "probe kernel then failed on it too" in str(info.value)
        assert "\n" not in str(info.value)
    assert not pool.gpus[0].healthy and pool.exhausted.is_set()
    assert message in pool.gpus[0].failures[-1]
    with pytest.raises(ToolchainError, match="no healthy GPU left"):
        list(tc.attempt(task, code, AttemptOptions(iteration=3)))


@pytest.mark.parametrize("message", STICKY)
def test_a_sticky_error_on_a_gpu_that_passes_the_probe_is_the_candidates(
    tmp_path: Path, message: str
) -> None:
    task = load_corpus(sticky_corpus(tmp_path, message)).get("vec_scale")
    pool = GpuPool(["0"], fail_limit=2)
    probe = GpuProbe(command=["true"])  # stands in for a healthy GPU's probe run
    tc = scheduled_local(pool, BuildSlots(1), None, probe=probe)
    for it in range(1, 4):  # more failures in a row than fail_limit
        events = list(tc.attempt(task, task.reference() or "", AttemptOptions(iteration=it)))
        verdict = events[-1]
        assert verdict.kind == "verdict" and not verdict.correct  # type: ignore[attr-defined]
        assert verdict.category != "passed"  # type: ignore[attr-defined]
    assert pool.gpus[0].healthy and pool.gpus[0].consecutive_failures == 0
    assert probe.runs == 3


def test_a_gpu_is_removed_only_by_failures_in_a_row() -> None:
    pool = GpuPool(["0"], fail_limit=3)
    for ok in (False, False, True, False, False, True):  # a reset: failures, then it works again
        pool.report(pool.gpus[0], ok=ok, detail="" if ok else "no CUDA-capable device is detected")
    assert pool.gpus[0].healthy and not pool.exhausted.is_set()
    for _ in range(3):
        pool.report(pool.gpus[0], ok=False, detail="GPU has fallen off the bus")
    assert not pool.gpus[0].healthy and pool.exhausted.is_set()


@needs_no_gpu
def test_a_batch_whose_gpus_all_fail_stops_with_one_line_and_stays_resumable(tmp_path: Path) -> None:
    _no_gpu()
    corpus = sticky_corpus(tmp_path, "an illegal memory access was encountered")
    cmd = [
        "batch", "--corpus", str(corpus), "--models", "scripted:@reference",
        "--toolchain", "local", "--gpus", "0,1", "--samples", "12", "--jobs", "2", "--no-cache",
        "--sessions-dir", str(tmp_path), "--run-id", "g", "--quiet",
    ]  # fmt: skip
    out = run_cli(*cmd)
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    removed = [ln for ln in lines if "taken out of the schedule after repeated failures" in ln]
    assert len(removed) == 2 and all("illegal memory access" in ln for ln in removed)
    (last,) = [ln for ln in lines if ln.startswith("beavertui: every GPU was taken out of the schedule")]
    assert "--resume" in last
    run = tmp_path / "g"
    m = read_manifest(run)
    assert m.status == "interrupted" and m.summary["gpus_removed"].keys() == {"0", "1"}
    ended = {}
    for p in run.rglob("*__s*.jsonl"):
        _h, events, problem = read_session(p)
        assert problem is None
        assert all(e.kind != "verdict" for e in events)  # no model was judged on a broken GPU
        if events and events[-1].kind == "end":
            ended[p] = p.read_bytes()
    # the rest wait, unfinished, for a working GPU. The first run spends at most 6 failures (3 a GPU), so at
    # least 6 of the 12 sessions are untouched, each with its retry: on resume they fail often enough to take
    # both GPUs out again, however the failures of the first run fell (with 6 sessions, as few as 4 might
    # be left, some without a retry, too few for 6 failures)
    assert len(ended) < 12
    # resuming on the still broken GPUs: the same clear stop, nothing that ended is touched
    again = run_cli("batch", "--resume", run, "--gpus", "0,1", "--quiet")
    assert again.returncode == 3 and "every GPU was taken out" in again.stderr
    assert all(p.read_bytes() == b for p, b in ended.items())
    print(
        f"\nreliability: GPU faults: 2 GPUs failing every run both removed after 3 failures each; "
        f"{12 - len(ended)} of 12 sessions left resumable, {len(ended)} ended as infrastructure failures; "
        "no verdict recorded against a model"
    )


@pytest.mark.gpu
def test_on_a_healthy_gpu_a_candidates_illegal_access_passes_the_probe_and_keeps_its_verdict() -> None:
    task = load_corpus(ROOT / "corpus").get("scan_00")  # its broken start faults on the H200
    pool = GpuPool(["0"], fail_limit=2)
    probe = GpuProbe()  # the real probe kernel
    tc = scheduled_local(pool, BuildSlots(2), None, probe=probe)
    for it in range(1, 4):
        events = list(tc.attempt(task, task.broken_start(), AttemptOptions(iteration=it)))
        run = next(e for e in events if e.kind == "run")
        assert "an illegal memory access was encountered" in run.result.log  # type: ignore[attr-defined]
        assert events[-1].kind == "verdict" and events[-1].category == "illegal_memory_access"  # type: ignore[attr-defined]
    assert pool.gpus[0].healthy and probe.runs == 3
