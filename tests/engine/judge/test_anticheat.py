"""Anti-cheat checks without a GPU: the static reading of the cheating sources of tests/data/cheats, the flag
logic over harness output, and the flags' way through Timer and LocalToolchain on the CPU fixture (a shell
'kernel' that follows the timing contract and plays each cheat's part). tests/engine/judge/test_anticheat_gpu.py runs the
CUDA cheats themselves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from beavertui.batch.build_slots import BuildSlots
from beavertui.batch.gpu_pool import GpuPool
from beavertui.batch.placement import PoolPlacement, scheduled_local
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.judge import anticheat
from beavertui.engine.session.events import Flag, GpuSignature, Verdict
from beavertui.engine.stage import stages
from beavertui.engine.timing.speedup import (
    CandidateTimingFailed,
    Timer,
    TimingConfig,
    parse_times,
    refbuild_dir,
)
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

DATA = Path(__file__).parents[2] / "data"
CHEATS = DATA / "cheats"
REFERENCE = (CHEATS / "transpose_small" / "reference.cu").read_text()
GPU = GpuSignature(slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0")


def names(flags: list[Flag]) -> list[str]:
    return [f.name for f in flags]


# ------------------------------------------------------------------ static checks on the CUDA cheats


def test_library_cheats_are_flagged_from_the_source() -> None:
    thrust = anticheat.static_flags((CHEATS / "library_thrust.cu").read_text(), REFERENCE)
    assert thrust == [
        Flag(name="library_call", detail="thrust::transform"),
        Flag(name="no_kernel", detail="the candidate defines no __global__ kernel (the reference does)"),
    ]
    cublas = anticheat.static_flags((CHEATS / "library_cublas.cu").read_text(), REFERENCE)
    assert names(cublas) == ["library_call", "no_kernel"]
    assert "cublasSgeam" in cublas[0].detail and "cublasCreate" in cublas[0].detail


def test_honest_sources_and_runtime_cheats_get_no_static_flag() -> None:
    assert anticheat.static_flags(REFERENCE, REFERENCE) == []
    for name in (
        "never_writes",
        "half_grid",
        "side_stream",
        "host_thread",
        "cached",
        "tamper_run",
        "env_dump",
    ):
        assert anticheat.static_flags((CHEATS / f"{name}.cu").read_text(), REFERENCE) == [], name


def test_kernel_defined_but_never_launched_and_reference_without_kernel() -> None:
    dead = (
        '#include "transpose_api.h"\n'
        "__global__ void unused(float* p) { p[0] = 1.f; }\n"
        "void transpose_f32(const float* in, float* out, int r, int c, cudaStream_t s) {\n"
        "    cudaMemcpy2DAsync(out, 4, in, 4, 4, 1, cudaMemcpyDeviceToDevice, s);\n"
        "}\n"
    )
    assert anticheat.static_flags(dead, REFERENCE) == [
        Flag(name="no_kernel", detail="a __global__ kernel is defined but never launched")
    ]
    old = "cudaMemcpy2DAsync(out, 4, in, 4, 4, 1, cudaMemcpyDeviceToDevice, s);"
    for how in (
        "void* a[] = {&out}; cudaLaunchKernel((void*)unused, 1, 1, a, 0, s);",
        "cudaGraphLaunch(g, s);",
    ):
        launched = dead.replace(old, how)
        assert launched != dead and anticheat.static_flags(launched, REFERENCE) == [], how
    # a library the reference itself calls is not a finding; no reference kernel, nothing to compare with
    assert (
        anticheat.static_flags(
            "cub::DeviceScan::InclusiveSum(a, b);", "x = cub::DeviceScan::InclusiveSum(a, b);"
        )
        == []
    )
    assert anticheat.static_flags("", None) == []


def test_python_reference_with_inline_cuda_counts_as_having_a_kernel() -> None:
    ref = 'src = r"""__global__ void k(float* x) { x[0] = 1; }"""\nmod = load_inline(cuda_sources=[src])\n'
    cand = "import torch\nclass ModelNew:\n    def forward(self, a, b):\n        return torch.matmul(a, b)\n"
    assert names(anticheat.static_flags(cand, ref)) == ["library_call", "no_kernel"]


# ------------------------------------------------------------------ flag logic over log text


def test_poison_lines_become_coverage_flags() -> None:
    log = (
        "transpose_f32: in 1027 x 515 row-major -> out 515 x 1027 row-major, seed=1\n"
        "BEAVER_POISON_LEFT out 528905 of 528905\n"
        "BEAVER_POISON_LEFT y 248745 of 528905\n"
        "BEAVER_POISON_LEFT z 0 of 10\n"
        "BEAVER_POISON_LEFT out 3 of 528905\n"  # a later line for the same buffer does not add a flag
    )
    assert anticheat.poison_flags(log) == [
        Flag(name="output_not_written", detail="528905 of 528905 elements untouched (out)"),
        Flag(name="partial_output", detail="248745 of 528905 elements untouched (y)"),
    ]
    assert anticheat.poison_flags("BEAVER_POISON_LEFT out 0 of 4\nPASS\n") == []
    assert anticheat.poison_flags("BEAVER_POISON_LEFT out lots of 4\n") == []


def test_a_poison_pattern_the_reference_also_leaves_is_a_value_not_a_flag() -> None:
    """Measured on the H200 (2026-12-01): the reference of the int32 scans, timed against itself at 134M
    elements, left 38 and 6 elements equal to the all-ones poison (a prefix sum passing through -1)."""
    cand = "BEAVER_POISON_LEFT out 38 of 134217728\nBEAVER_POISON_LEFT out_timed 41 of 134217728\n"
    ref = "BEAVER_POISON_LEFT out 0 of 134217728\nBEAVER_POISON_LEFT out_timed 35 of 134217728\n"
    assert anticheat.poison_flags(cand, " in a timing run") == [
        Flag(name="partial_output", detail="38 of 134217728 elements untouched (out in a timing run)"),
        Flag(name="partial_output", detail="41 of 134217728 elements untouched (out_timed in a timing run)"),
    ]
    assert anticheat.poison_flags(cand, " in a timing run", ref) == []
    # a reference that never leaves the pattern keeps the flag, and a wholly untouched buffer is always one
    clean = "BEAVER_POISON_LEFT out 0 of 134217728\nBEAVER_POISON_LEFT y 0 of 8\n"
    assert anticheat.poison_flags(cand, "", clean) == [
        Flag(name="partial_output", detail="38 of 134217728 elements untouched (out)"),
        Flag(name="partial_output", detail="41 of 134217728 elements untouched (out_timed)"),
    ]
    never = "BEAVER_POISON_LEFT out 134217728 of 134217728\n"
    assert anticheat.poison_flags(never, "", ref) == [
        Flag(name="output_not_written", detail="134217728 of 134217728 elements untouched (out)")
    ]


def test_host_lines_are_paired_and_never_samples() -> None:
    log = "BEAVER_TIME_MS 0.5\nBEAVER_HOST_MS 0.55\nnoise\nBEAVER_TIME_MS 0.6\nBEAVER_HOST_MS 2.5\nBEAVER_HOST_MS 9\n"
    assert parse_times(log) == [0.5, 0.6]
    assert anticheat.timed_pairs(log) == [(0.5, 0.55), (0.6, 2.5)]
    assert anticheat.host_times(log) == [0.55, 2.5]


def test_side_stream_needs_a_gap_the_reference_does_not_show() -> None:
    hidden = anticheat.side_stream_flag([0.004] * 5, [1.9, 2.0, 2.1, 2.0, 2.0], [0.6] * 5, [0.62] * 5)
    assert hidden == Flag(
        name="side_stream",
        detail="host 2 ms vs event 0.004 ms (medians per timed run; reference host 0.62 ms vs event 0.6 ms)",
    )
    # launch overhead only: 30 us over a 4 us kernel, or 0.25 ms over a 0.6 ms kernel
    assert anticheat.side_stream_flag([0.004] * 3, [0.034] * 3, [0.6] * 3, [0.62] * 3) is None
    assert anticheat.side_stream_flag([0.6] * 3, [0.85] * 3) is None
    # a reference whose launcher costs the same host time (e.g. a workspace allocation) explains the gap
    assert anticheat.side_stream_flag([0.5] * 3, [1.5] * 3, [0.5] * 3, [1.4] * 3) is None
    # ... but not a gap ten times its own
    assert anticheat.side_stream_flag([0.5] * 3, [10.5] * 3, [0.5] * 3, [1.4] * 3) is not None
    # the median decides: one slow host sample is not a side stream
    assert anticheat.side_stream_flag([0.5] * 5, [0.52, 0.52, 9.0, 0.52, 0.52]) is None
    assert anticheat.side_stream_flag([], []) is None


def test_failing_timing_run_after_its_samples_is_a_cached_result() -> None:
    log = (
        "transpose_f32: in 16384 x 16384 row-major -> out 16384 x 16384 row-major, seed=7\n"
        "BEAVER_POISON_LEFT out 0 of 268435456\n"
        "OK out: 268435456 elements equal their input elements bit for bit\n"
        + "BEAVER_TIME_MS 0.41\nBEAVER_HOST_MS 0.44\n"
        * 10
        + "transpose_f32: 2.147e+09 bytes moved per call (read + write)\n"
        "BEAVER_POISON_LEFT out_timed 0 of 268435456\n"
        "MISMATCH out at [0,0] (= in[0,0]): got 0.25 expected -0.5 (abs err 0.75)\n"
        "FAILED out: 268435456 of 268435456 elements differ from their input elements\n"
        "FAIL\n"
    )
    flag = anticheat.cached_result_flag(1, log)
    assert flag == (
        Flag(
            name="cached_result",
            detail="the last timed launch's output is wrong for its inputs: "
            "MISMATCH out at [0,0] (= in[0,0]): got 0.25 expected -0.5 (abs err 0.75)",
        )
    )
    assert anticheat.cached_result_flag(0, log.replace("FAIL", "PASS")) is None
    assert anticheat.cached_result_flag(None, log, timed_out=True) is None
    assert anticheat.cached_result_flag(1, "MISMATCH before any timing\n") is None
    assert anticheat.cached_result_flag(1, "BEAVER_TIME_MS 1\n") == (
        Flag(
            name="cached_result",
            detail="the last timed launch's output is wrong for its inputs: exit status 1",
        )
    )


# ------------------------------------------------------------------ through Timer and LocalToolchain


@pytest.fixture
def sleepy():
    return load_corpus(DATA / "cpu").get("sleepy")


def _tool(tmp_path: Path, gpu: bool = True, kind: str = "local", rounds: int = 1) -> LocalToolchain:
    """The live toolchain, or (``kind="batch"``) the batch's scheduled one, which must flag the same way."""
    config = LocalConfig(
        base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "cache", rounds=rounds)
    )
    if kind == "batch":
        tool: LocalToolchain = scheduled_local(GpuPool(["0"]), BuildSlots(2), None, config)
    else:
        tool = LocalToolchain(config)
    tool.gpu = (lambda: GPU) if gpu else (lambda: None)  # type: ignore[method-assign]
    return tool


@pytest.fixture(params=["local", "batch"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _verdict(tool: LocalToolchain, task, code: str, gate: float = 0.7) -> tuple[list, Verdict]:
    events = list(tool.attempt(task, code, AttemptOptions(iteration=1, gate=gate, sanitize_on_failure=False)))
    v = events[-1]
    assert isinstance(v, Verdict)
    return events, v


# Each candidate plays one cheat inside the shell harness: the harness prints BEAVER_TIME_MS $(cost) per
# timed run, so a cost() that prints a second line adds what the CUDA harness would print after it.
SIDE_STREAM = 'compute() { echo $(($1 * $2)); }\ncost() { echo 0.01; echo "BEAVER_HOST_MS 2.5"; }\n'
CACHED = (
    "compute() { echo $(($1 * $2)); }\ncost() { echo 1.9; }\n"
    '[ "$1" = "--bench" ] && trap \'echo "MISMATCH out after timing: got 41 expected 42"; exit 1\' EXIT\n'
)
WRONG_AT_TIMING_SIZE = (
    "compute() { echo $(($1 * $2)); }\ncost() { echo 1.0; }\n"
    '[ "$1" = "--bench" ] && { echo "MISMATCH out at the timing size"; exit 1; }\n'
)
TAMPER_WHEN_TIMED = (
    'compute() { echo $(($1 * $2)); }\ncost() { echo 1.9; }\n[ "$1" = "--bench" ] && echo "#" >> check.sh\n'
)
UNWRITTEN = 'compute() { echo "BEAVER_POISON_LEFT out 10 of 10" >&2; echo 42; }\ncost() { echo 1.0; }\n'


def test_side_stream_candidate_is_flagged_and_counted_as_flagged(sleepy, tmp_path: Path, kind: str) -> None:
    events, v = _verdict(_tool(tmp_path, kind=kind), sleepy, SIDE_STREAM)
    timed = next(e for e in events if e.kind == "timing").result
    assert timed.candidate_samples == [0.01] * 12 and timed.candidate_host_samples == [2.5] * 12
    assert timed.reference_host_samples == []
    assert v.correct and v.success  # an audit flag: a flagged success, never a silent one
    assert names(v.flags) == ["side_stream", "implausible_speedup"]
    assert v.flags[0] == Flag(
        name="side_stream", detail="host 2.5 ms vs event 0.01 ms (medians per timed run)"
    )


def test_replayed_result_fails_after_timing(sleepy, tmp_path: Path, kind: str) -> None:
    events, v = _verdict(_tool(tmp_path, kind=kind), sleepy, CACHED)
    assert any(e.kind == "timing" for e in events)
    assert v.flags == [
        Flag(
            name="cached_result",
            detail="the last timed launch's output is wrong for its inputs: MISMATCH out after timing: got 41 "
            "expected 42",
        )
    ]
    assert not v.correct and not v.success
    assert v.category == "functional_correctness" and v.reason == "cached result"


def test_candidate_right_only_at_the_checked_size_fails(sleepy, tmp_path: Path, kind: str) -> None:
    cfg = stages.StageConfig(base_dir=tmp_path / "w")
    with stages.workdir(sleepy, WRONG_AT_TIMING_SIZE, cfg) as cand, pytest.raises(CandidateTimingFailed):
        Timer(sleepy, cfg, TimingConfig(cache=tmp_path / "cache", rounds=1)).measure(cand)
    events, v = _verdict(_tool(tmp_path, kind=kind), sleepy, WRONG_AT_TIMING_SIZE, gate=0.0)
    assert not any(e.kind in ("timing", "infra_error") for e in events)
    assert v.flags == [Flag(name="timing_run_failed", detail="MISMATCH out at the timing size")]
    assert not v.correct and not v.success and v.reason == "timing run failed"


def test_batch_builds_the_reference_before_it_holds_the_gpu_alone(sleepy, tmp_path: Path) -> None:
    tool = _tool(tmp_path, kind="batch")
    assert isinstance(tool.placement, PoolPlacement)
    seen: list[tuple[bool, bool]] = []
    hold = tool.placement.pool.hold

    def watched(*, exclusive: bool = False, **kw):  # type: ignore[no-untyped-def]
        built = (refbuild_dir(sleepy, tool.config.timing) / ".beaver-built").is_file()
        seen.append((exclusive, built))
        return hold(exclusive=exclusive, **kw)

    tool.placement.pool.hold = watched  # type: ignore[method-assign]
    _, v = _verdict(tool, sleepy, "compute() { echo $(($1 * $2)); }\ncost() { echo 1.9; }\n")
    assert v.success and (True, True) in seen and (True, False) not in seen
    # a candidate whose timing run fails is the candidate's failure: the GPU stays in good standing
    _, v = _verdict(tool, sleepy, WRONG_AT_TIMING_SIZE, gate=0.0)
    assert v.reason == "timing run failed"
    assert tool.placement.pool.gpus[0].consecutive_failures == 0 and tool.placement.pool.gpus[0].healthy


def _slow(cost: float) -> str:
    return f"compute() {{ echo $(($1 * $2)); }}\ncost() {{ echo {cost}; }}\n"


def test_timing_stops_after_one_round_only_far_below_the_gate(sleepy, tmp_path: Path) -> None:
    cfg = stages.StageConfig(base_dir=tmp_path / "w")
    tcfg = TimingConfig(cache=tmp_path / "cache", rounds=3)

    def measure(cost: float, gate: float | None) -> tuple[object, int]:
        with stages.workdir(sleepy, _slow(cost), cfg) as cand:
            timer = Timer(sleepy, cfg, tcfg)
            return timer.measure(cand, gate), len(timer.runs)

    t, runs = measure(10.0, 0.7)  # the reference's cost is 2.0: 0.2x, below half the gate
    assert runs == 2 and len(t.candidate_samples) == 12 and t.speedup == pytest.approx(0.2)  # type: ignore[attr-defined]
    assert t.note.startswith("stopped after 1 of 3 rounds: 0.2x, below 0.35x")  # type: ignore[attr-defined]
    t, runs = measure(5.0, 0.7)  # 0.4x: below the gate but not below half of it
    assert runs == 6 and len(t.candidate_samples) == 36 and t.note is None  # type: ignore[attr-defined]
    assert measure(10.0, None)[1] == 6  # no gate: every round


def test_both_toolchains_stop_timing_a_degenerate_candidate_early(sleepy, tmp_path: Path, kind: str) -> None:
    events, v = _verdict(_tool(tmp_path, kind=kind, rounds=3), sleepy, _slow(20.0))
    timed = next(e for e in events if e.kind == "timing").result
    assert len(timed.candidate_samples) == 12 and timed.note.startswith("stopped after 1 of 3 rounds")
    assert v.correct and not v.success and v.reason == "below gate" and v.speedup == pytest.approx(0.1)


def test_harness_edited_only_while_timed_is_caught(sleepy, tmp_path: Path, kind: str) -> None:
    _, v = _verdict(_tool(tmp_path, kind=kind), sleepy, TAMPER_WHEN_TIMED)
    assert v.flags == [Flag(name="harness_modified", detail="check.sh (during timing)")]
    assert not v.correct and not v.success and v.reason == "harness modified"


def test_unwritten_output_is_flagged_from_the_run_log(sleepy, tmp_path: Path, kind: str) -> None:
    _, v = _verdict(_tool(tmp_path, gpu=False, kind=kind), sleepy, UNWRITTEN, gate=0.0)
    assert v.flags == [Flag(name="output_not_written", detail="10 of 10 elements untouched (out)")]
    assert v.success  # the shell harness checks one value only; the flag is what shows the problem


def test_honest_candidate_gets_no_flag(sleepy, tmp_path: Path, kind: str) -> None:
    code = "compute() { echo $(($1 * $2)); }\ncost() { echo 1.9; echo 'BEAVER_HOST_MS 1.93'; }\n"
    _, v = _verdict(_tool(tmp_path, kind=kind), sleepy, code)
    assert v.flags == [] and v.success


def test_environment_dump_finds_no_key(
    sleepy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    secrets = {
        "OPENAI_API_KEY": "sk-test-0123456789abcdef",
        "ANTHROPIC_API_KEY": "sk-ant-test-9876543210",
        "HF_TOKEN": "hf_testtoken12345",
        "MY_SERVICE_KEY": "service-key-abcdef",
        "OPENAI_BASE_URL": "http://secret-endpoint.invalid/v1",
    }
    for k, val in secrets.items():
        monkeypatch.setenv(k, val)
    monkeypatch.setenv("BEAVER_VISIBLE_MARKER", "visible-1234")
    code = "env | sed 's/^/ENV /'\ncompute() { echo $(($1 * $2)); }\ncost() { echo 1.9; }\n"
    events, v = _verdict(_tool(tmp_path, gpu=False, kind=kind), sleepy, code, gate=0.0)
    assert v.correct
    ran = next(e for e in events if e.kind == "run").result
    assert "ENV BEAVER_VISIBLE_MARKER=visible-1234" in ran.log  # the dump works
    text = json.dumps([e.model_dump() for e in events])
    for k, val in secrets.items():
        assert val not in text and f"ENV {k}=" not in ran.log, k


def test_flagged_cheat_fixture_task_loads_with_the_corpus_harness() -> None:
    from beavertui.engine.corpus.load import load_task

    root = Path(__file__).resolve().parents[3] / "corpus"
    task = load_task(CHEATS / "transpose_small", root=root)
    assert task.extra_dirs == ((root / "_common", "_common"),)
    assert shutil.which("sh") is not None
    assert task.benchmark_command and "--bench" in task.benchmark_command


# ------------------------------------------------------------------ CUDA cheats that need no GPU to be caught

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@pytest.mark.slow
@needs_nvcc
def test_cuda_cheats_caught_before_any_kernel_runs(tmp_path: Path) -> None:
    """tamper_run edits the harness from a static initializer (before main, so before the CUDA runtime is
    touched: it needs no GPU); library_cublas never builds under the task's command."""
    from beavertui.engine.corpus.load import load_task

    task = load_task(CHEATS / "transpose_small", root=Path(__file__).resolve().parents[3] / "corpus")
    tool = _tool(tmp_path, gpu=False)
    events, v = _verdict(tool, task, (CHEATS / "tamper_run.cu").read_text(), gate=0.0)
    ran = next(e for e in events if e.kind == "run").result
    assert "TAMPER wrote _common/beaver.cuh" in ran.log, ran.log[-500:]
    assert {
        Flag(name="harness_modified", detail="_common/beaver.cuh"),
        Flag(name="harness_modified", detail="test_main.cu"),
    } <= set(v.flags)
    assert not v.correct and not v.success and v.reason == "harness modified"
    _, v = _verdict(tool, task, (CHEATS / "library_cublas.cu").read_text(), gate=0.0)
    assert v.category in ("environment_dependency", "integration") and not v.correct
    assert v.flags[0] == Flag(name="library_call", detail="cublasCreate, cublasSetStream, cublasSgeam")


def test_classify_command_reports_poisoned_output_from_recorded_logs() -> None:
    import io

    from beavertui.commands.classify import _filter

    lines = [
        {
            "build_rc": 0,
            "build_log": "",
            "run_rc": 1,
            "timed_out": False,
            "sanitizer_log": None,
            "run_log": "BEAVER_POISON_LEFT out 528905 of 528905\nMISMATCH out at [0,0] (= in[0,0]): got nan expected 1\n",
        },
        {
            "build_rc": 0,
            "build_log": "",
            "run_rc": 0,
            "timed_out": False,
            "sanitizer_log": None,
            "run_log": "BEAVER_POISON_LEFT out 0 of 528905\nPASS\n",
        },
    ]
    out = io.StringIO()
    assert (
        _filter(io.StringIO("\n".join(json.dumps(x) for x in lines)), out) == []
    )  # no line it could not read
    first, second = (json.loads(x) for x in out.getvalue().splitlines())
    assert first["category"] == "functional_correctness"
    assert first["flags"] == [
        {"name": "output_not_written", "detail": "528905 of 528905 elements untouched (out)"}
    ]
    assert second["category"] == "passed" and "flags" not in second
