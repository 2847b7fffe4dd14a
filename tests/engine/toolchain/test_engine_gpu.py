"""GPU tests of the engine (run on an H200 by scripts/gpu-tests.sh): timing, memcheck override, timeout
kill, and every kind of release-layout fixture end to end through the LocalToolchain."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus, runnable_here
from beavertui.engine.host.gpu import probe
from beavertui.engine.judge.classify import classify
from beavertui.engine.session.events import Built, Ran, Sanitized, Timed, Verdict
from beavertui.engine.timing.speedup import TimingConfig
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

pytestmark = pytest.mark.gpu
DATA = Path(__file__).parents[2] / "data"


def _attempt(task, code: str, tmp_path: Path, **kw):
    timing = kw.pop("timing", TimingConfig(cache=tmp_path / "cache"))
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work", timing=timing))
    events = list(tool.attempt(task, code, AttemptOptions(iteration=1, **kw)))
    assert isinstance(events[-1], Verdict)
    assert [e for e in events if isinstance(e, Verdict)] == [events[-1]]
    return events, events[-1]


def _procs_under(path: Path) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(str(path)):
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


@pytest.fixture(scope="module")
def native():
    return load_corpus(DATA / "native")


@pytest.fixture(scope="module")
def release():
    return load_corpus(DATA / "release")


def test_native_reference_passes_and_is_timed_with_low_cv(native, tmp_path: Path) -> None:
    task = native.get("vec_scale")
    assert runnable_here(task, probe()) is None
    events, v = _attempt(task, task.reference(), tmp_path, gate=0.7)
    timed = [e for e in events if isinstance(e, Timed)]
    assert v.category == "passed" and v.correct, v
    assert len(timed) == 1
    t = timed[0].result
    print(f"vec_scale reference vs itself: {t}")
    assert t.method == "beaver_time_ms"
    assert len(t.reference_samples) >= 10 and len(t.candidate_samples) >= 10
    assert t.reference_cv < 0.03 and t.candidate_cv < 0.03
    assert 0.9 < t.speedup < 1.1
    assert v.success and v.speedup == t.speedup


def test_oob_read_with_wrong_result_is_illegal_memory_access_by_memcheck(native, tmp_path: Path) -> None:
    task = native.get("vec_scale")
    events, v = _attempt(task, task.broken_start(), tmp_path)
    ran = next(e for e in events if isinstance(e, Ran)).result
    print(f"vec_scale broken start run log: {ran.log!r}")
    assert ran.rc == 1 and "MISMATCH" in ran.log
    assert classify(0, "", ran.rc, ran.log, False).category == "functional_correctness"
    san = [e for e in events if isinstance(e, Sanitized)]
    assert [s.tool for s in san] == ["memcheck"]
    assert san[0].error_count and san[0].error_count > 0
    rec = san[0].records[0]
    assert rec.kind == "Invalid __global__ read" and rec.size == 4 and rec.kernel == "scale_kernel"
    assert v.category == "illegal_memory_access"
    assert v.signature.startswith("memcheck: Invalid __global__ read")


def test_silent_oob_read_that_passes_is_caught_by_memcheck_on_demand(native, tmp_path: Path) -> None:
    task = native.get("vec_scale")
    code = (
        '#include "scale.h"\n'
        "__global__ void scale_kernel(const float* in, float* out, float s, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) { float next = in[i + 1]; out[i] = next > 3.0e38f ? 0.f : s * in[i]; }\n"
        "}\n"
        "void launch_scale(const float* in, float* out, float s, int n) {\n"
        "    scale_kernel<<<(n + 255) / 256, 256>>>(in, out, s, n);\n"
        "}\n"
    )
    events, v = _attempt(task, code, tmp_path, sanitize_tools=("memcheck",), time_if_correct=False)
    ran = next(e for e in events if isinstance(e, Ran)).result
    assert ran.rc == 0 and "PASS" in ran.log
    assert v.category == "illegal_memory_access" and not v.correct


def test_never_terminating_kernel_is_killed_within_limit(native, tmp_path: Path) -> None:
    task = native.get("spin")
    t0 = time.monotonic()
    events, v = _attempt(task, task.broken_start(), tmp_path, keep_workdir=True)
    ran = next(e for e in events if isinstance(e, Ran)).result
    assert ran.timed_out and ran.rc is None
    assert task.timeouts.run_s <= ran.duration_s < task.timeouts.run_s + 3
    assert v.category == "timeout" and v.signature == "timeout: run stage"
    assert not any(isinstance(e, Sanitized) for e in events)
    time.sleep(0.5)
    assert _procs_under(tmp_path) == []
    assert time.monotonic() - t0 < 60


EXPECTED_BROKEN = {
    "cuda_901__compile_error__a0000001": "buildability",
    "cuda_902__memory_crash__a0000002": "illegal_memory_access",
    "cudabench_903__memory_crash__a0000003": "illegal_memory_access",
    "kernelbench_level1_904__logic_error__a0000004": "functional_correctness",
    "thunderkittens_907_axpy__compile_error__a0000007": "buildability",
}


@pytest.mark.parametrize("task_id", sorted(EXPECTED_BROKEN))
def test_release_fixture_broken_start_end_to_end(release, tmp_path: Path, task_id: str) -> None:
    task = release.get(task_id)
    assert runnable_here(task, probe()) is None
    # memcheck of a torch process takes minutes; the kernelbench harness result is what is checked here
    events, v = _attempt(
        task,
        task.broken_start(),
        tmp_path,
        time_if_correct=False,
        sanitize_on_failure=not task_id.startswith("kernelbench"),
    )
    print(task_id, v.category, v.signature, [e.kind for e in events])
    assert v.category == EXPECTED_BROKEN[task_id], [getattr(e, "result", None) for e in events]
    if task_id.startswith(("cuda_902", "cudabench")):
        san = [e for e in events if isinstance(e, Sanitized)]
        assert san and san[0].records and san[0].records[0].kind.startswith("Invalid __global__")


@pytest.mark.parametrize(
    "task_id",
    [
        "cuda_901__compile_error__a0000001",
        "cudabench_903__memory_crash__a0000003",
        "thunderkittens_907_axpy__compile_error__a0000007",
    ],
)
def test_release_fixture_reference_passes(release, tmp_path: Path, task_id: str) -> None:
    task = release.get(task_id)
    events, v = _attempt(task, task.reference(), tmp_path, time_if_correct=False)
    built = next(e for e in events if isinstance(e, Built)).result
    if task_id.startswith("thunderkittens"):
        assert "GPU=H100" in built.command and "RTX5070" not in built.command
    assert v.category == "passed", [getattr(e, "result", None) for e in events]


def test_cutlass_fixture_perf_broken_start_is_correct_and_timed_by_its_speed_lines(
    release, tmp_path: Path
) -> None:
    # the cutlass family's reference is the CUTLASS kernel compiled into the testbench, timed in the same
    # binary: its Ref time / Kernel time / Speedup lines are the timing (families.Family.speed)
    task = release.get("cutlass_905_basic_gemm__perf_broken__a0000005")
    events, v = _attempt(task, task.broken_start(), tmp_path, gate=0.7)
    timed = [e for e in events if isinstance(e, Timed)]
    assert v.correct and timed, events
    t = timed[0].result
    print(f"cutlass naive vs tiled: {t}")
    assert t.method == "testbench_lines"
    assert len(t.candidate_samples) == 3 and len(t.reference_samples) == 3  # one per run of the testbench
    assert t.speedup < 1.0
    assert v.reason in ("below gate", "passed")


def test_ncu_fallback_times_the_same_pair(release, tmp_path: Path) -> None:
    # a CUPTI family's task timed by ncu instead: its reference submitted against itself
    task = release.get("cuda_901__compile_error__a0000001")
    timing = TimingConfig(cache=tmp_path / "cache", method="ncu", process_runs=3)
    events, v = _attempt(task, task.reference(), tmp_path, timing=timing, gate=0.7)
    timed = [e for e in events if isinstance(e, Timed)]
    assert v.correct and timed, [e for e in events if e.kind == "infra_error"]
    t = timed[0].result
    print(f"cuda reference against itself (ncu): {t}")
    assert t.method == "ncu" and 0.8 < t.speedup < 1.25


def test_validate_native_fixture_corpus(tmp_path: Path) -> None:
    import shutil

    from beavertui.engine.host.ceilings import measure
    from beavertui.engine.validation.validate import validate

    root = tmp_path / "corpus"
    shutil.copytree(DATA / "native", root)
    tasks = list(load_corpus(root).tasks)
    machine = probe()
    ceilings = measure(machine.gpu, cache=tmp_path / "cache", torch_ok=machine.torch)
    print(f"ceilings: {ceilings}")
    assert ceilings.copy_gbps and ceilings.copy_gbps > 1000
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "cache"))
    results = {r.task_id: r for r in validate(tasks, machine, config, ceilings=ceilings)}
    for r in results.values():
        print(r)
    vs, spin = results["vec_scale"], results["spin"]
    assert vs.valid and vs.broken_category == "illegal_memory_access" and vs.label_agrees
    assert vs.method == "beaver_time_ms" and vs.reference_cv is not None and vs.reference_cv < 0.03
    assert vs.gbps is not None and vs.gbps_fraction is not None and 0.3 < vs.gbps_fraction < 1.2
    assert Path(vs.baseline_path or "").is_file()
    assert spin.valid and spin.broken_category == "timeout" and spin.label_agrees
