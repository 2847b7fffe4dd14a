"""Release command adaptations, the GPU signature slug, and compute-sanitizer command wrapping."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from beavertui.engine.host.adapt import adapt_command, adapt_env
from beavertui.engine.host.gpu import arch_family, parse_smi, signature_slug, tk_gpu
from beavertui.engine.judge.sanitizer import harness_runs_sanitizer, wrap

RELEASE = Path(__file__).parents[2] / "data" / "release" / "data"
PY = shlex.quote(sys.executable)


def _meta(task: str) -> dict:
    return json.loads((RELEASE / task / "input.json").read_text())


def test_python_becomes_the_current_interpreter_in_command_position_only() -> None:
    cmd = "mkdir -p data && python test/gen.py && python3 -c \"print('python here')\" | env A=1 python x.py"
    assert adapt_command(cmd, None) == (
        f"mkdir -p data && {PY} test/gen.py && {PY} -c \"print('python here')\" | env A=1 {PY} x.py"
    )
    assert adapt_command("./test.out --python", None) == "./test.out --python"


def test_arch_family_and_make_gpu_follow_the_local_gpu() -> None:
    kb = adapt_command(_meta("kernelbench_level1_904__logic_error__a0000004")["test_command"], 90)
    assert "set_gpu_arch(['Hopper'])" in kb and "Blackwell" not in kb
    tk = adapt_command(_meta("thunderkittens_907_axpy__compile_error__a0000007")["build_command"], 90)
    assert tk == "cd kernels/axpy && make GPU=H100 clean && make GPU=H100"
    assert adapt_command("make GPU=H100", 80) == "make GPU=A100"
    assert adapt_command("make GPU=H100", None) == "make GPU=H100"


@pytest.mark.parametrize(
    ("sm", "family", "tk"),
    [(70, "Volta", "A100"), (75, "Turing", "A100"), (80, "Ampere", "A100"), (86, "Ampere", "A100"),
     (89, "Ada", "4090"), (90, "Hopper", "H100"), (100, "Blackwell", "B200"), (120, "Blackwell", "RTX5070")],
)  # fmt: skip
def test_families(sm: int, family: str, tk: str) -> None:
    assert arch_family(sm) == family and tk_gpu(sm) == tk


def test_env_gets_vendored_package_and_arch_list() -> None:
    env = adapt_env({"PYTHONPATH": "/x"}, (Path("/rel/harness/_vendor"),), 90)
    assert env["PYTHONPATH"] == "/rel/harness/_vendor:/x" and env["TORCH_CUDA_ARCH_LIST"] == "9.0"


def test_gpu_signature_slug() -> None:
    sig = parse_smi("NVIDIA H200, 9.0, 580.159.04", "13.0")
    assert sig.slug == "nvidia_h200_sm_90_cuda_13_0" and sig.driver == "580.159.04"
    assert (
        signature_slug("NVIDIA GeForce RTX 4090", "8.9", "12.4") == "nvidia_geforce_rtx_4090_sm_89_cuda_12_4"
    )
    with pytest.raises(ValueError):
        parse_smi("garbage", "13.0")


def test_sanitizer_wrapping() -> None:
    assert (
        wrap("./test.out --n 3", "memcheck")
        == "compute-sanitizer --tool memcheck --print-limit 100 ./test.out --n 3"
    )
    assert wrap("python test_correctness.py", "racecheck") == (
        "compute-sanitizer --tool racecheck --print-limit 100 --racecheck-report analysis "
        "--target-processes all /bin/bash -c 'python test_correctness.py'"
    )
    assert harness_runs_sanitizer(_meta("cuda_902__memory_crash__a0000002")["test_command"])
    assert not harness_runs_sanitizer("./test.out")
    with pytest.raises(ValueError):
        wrap("./a", "leakcheck")
