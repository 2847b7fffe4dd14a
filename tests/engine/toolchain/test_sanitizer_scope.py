"""What a sanitizer run checks, per family: kernelbench's covers the candidate's own kernels only.

On the real release instances of tests/data/release_real. A kernelbench test runs the eager reference beside
the candidate in one process, so an unscoped memcheck instruments every cuDNN and cuBLAS kernel of the
reference too (on the H200, 4 of 5 checks of conv tasks ran into their 300 s limit with nothing reported).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from beavertui.engine.corpus import families
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.loop import startlog
from beavertui.engine.session.events import GpuSignature, Sanitized
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

DATA = Path(__file__).resolve().parents[2] / "data"
GPU = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")


def _task(prefix: str) -> Task:
    return next(t for t in load_corpus(DATA / "release_real").tasks if t.id.startswith(prefix))


def test_the_kernels_a_real_kernelbench_start_defines_are_found() -> None:
    assert families.candidate_kernels(_task("kernelbench_level2_63").broken_start()) == [
        "fused_linear_relu_div_kernel"
    ]
    # indented inside the Python string of the inline extension
    assert families.candidate_kernels(_task("kernelbench_level1_92").broken_start()) == [
        "exclusive_cumsum_rowwise_kernel"
    ]
    src = """
    template <typename T, int N>
    __global__ void __launch_bounds__(256) scale_kernel(T* x) {}
    __global__ __launch_bounds__(128, 2) void add_kernel(float* a, const float* b);
    __global__ static void  relu_kernel (float* y) {}
    __global__ void add_kernel(float* a, const float* b) {}  // the definition after its declaration
    __device__ float helper(float v) { return v; }
    """
    assert families.candidate_kernels(src) == ["scale_kernel", "add_kernel", "relu_kernel"]
    assert families.candidate_kernels("import torch\nprint('no kernel here')\n") == []


def test_kernelbench_is_scoped_to_the_candidates_kernels_and_other_families_are_not() -> None:
    kb = _task("kernelbench_level2_63")
    opts, env = families.sanitizer_scope(kb, kb.broken_start())
    # the name as the mangled name holds it: its length, then the name (any namespace, any template)
    assert opts == ("--kernel-name", "kns=28fused_linear_relu_div_kernel")
    assert env == "PYTORCH_NO_CUDA_MEMORY_CACHING=1"
    extern = 'extern "C" __global__ void k2(float* x) {}'
    assert families.sanitizer_scope(kb, extern)[0] == ("--kernel-name", "kns=2k2", "--kernel-name", "kne=k2")
    # no kernel to scope to: the whole process is checked, allocator cache still off
    assert families.sanitizer_scope(kb, "ModelNew = None\n") == ((), env)
    cuda = _task("cuda_59")
    assert families.sanitizer_scope(cuda, cuda.broken_start()) == ((), "")
    assert families.sanitizer_scope_rule(cuda) is None
    assert families.sanitizer_scope_rule(kb) == families.KERNELBENCH_SANITIZER_SCOPE


def test_a_failing_kernelbench_attempt_records_the_scoped_sanitizer_command(tmp_path: Path) -> None:
    kb = _task("kernelbench_level2_63")
    # the release's checker and eval need torch and a GPU: the same task with commands that fail the same way
    failing = replace(
        kb,
        build_command="true",
        test_command="echo 'compiled=True correctness=False'; exit 1",
    )
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path, sanitizer_exe="compute-sanitizer-not-here"))
    events = list(tool.attempt(failing, kb.broken_start(), AttemptOptions(iteration=1)))
    san = [e for e in events if isinstance(e, Sanitized)]
    assert len(san) == 1 and san[0].tool == "memcheck"
    cmd = san[0].result.command
    assert cmd.startswith(
        "compute-sanitizer-not-here --tool memcheck --print-limit 100 "
        "--kernel-name kns=28fused_linear_relu_div_kernel --target-processes all /bin/bash -c "
    )
    assert "'PYTORCH_NO_CUDA_MEMORY_CACHING=1 echo " in cmd


def test_the_start_checks_key_covers_the_kernelbench_scope_and_leaves_other_keys_as_they_were(
    monkeypatch,
) -> None:
    kb, cuda = _task("kernelbench_level2_63"), _task("cuda_59")
    scoped = startlog.key(kb, GPU, 0.7, True), startlog.key(cuda, GPU, 0.7, True)
    monkeypatch.setattr(families, "sanitizer_scope_rule", lambda task: None)
    unscoped = startlog.key(kb, GPU, 0.7, True), startlog.key(cuda, GPU, 0.7, True)
    assert scoped[0] != unscoped[0]  # a check made with the whole process checked is not taken for one
    assert scoped[1] == unscoped[1]
