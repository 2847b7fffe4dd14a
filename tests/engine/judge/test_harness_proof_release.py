"""The harness proof covers the release's nvcc-built harness families, on real release instances.

Before (e6f7b95), only native tasks carried the proof: a candidate of a release cuda task whose static
constructor printed a pass and called ``_exit(0)`` before the testbench's ``main`` was judged passed, correct,
unflagged. The instances are the release's own (tests/data/release_real, and tests/data/release_proof for
cusolver), built by the real nvcc; the cheat ends the process before any CUDA call, so no GPU is needed. The
library families (cuBLAS, cuSPARSE, cuSOLVER, cuFFT) build only where the toolkit has that library's headers
and libraries: elsewhere their case is skipped, saying so (scripts/gpu-harness-proof-release.sh runs every
case on a GPU machine).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from beavertui.engine.corpus import families
from beavertui.engine.corpus.load import load_task
from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import Ran, Verdict
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "data" / "release_real" / "data"
PROOF = ROOT / "tests" / "data" / "release_proof" / "data"
NVCC = shutil.which("nvcc")

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")

#: One real instance of each family the proof covers, with the header its build needs beyond the runtime.
CASES = {
    "cuda": (REAL / "cuda_104__compile_error__f8160fc8", None),
    "cuda-sanitizer": (REAL / "cuda_1__memory_crash__4c324055", "compute-sanitizer"),
    "cublas": (REAL / "cublas_level1_10__compile_error__d6b7227b", "cublas_v2.h"),
    "cusparse": (REAL / "cusparse_4__compile_error__cfcd99f6", "cusparse.h"),
    "cusolver": (PROOF / "cusolver_18__compile_error__8adf6079", "cusolverDn.h"),
    "cufft": (REAL / "cufft_1__compile_error__611168ad", "cufft.h"),
}

CONSTRUCTOR = """
#include <cstdio>
#include <unistd.h>
__attribute__((constructor)) static void beaver_wins() {
    std::printf("All tests passed!\\n");
    std::fflush(stdout);
    _exit(0);
}
"""


def _missing(need: str | None) -> str | None:
    """Why this machine cannot build or run a case (None: it can): a tool not on PATH, or a header that
    nvcc does not find (its library is then not installed either)."""
    if need is None or NVCC is None:
        return None
    if "." not in need:
        return None if shutil.which(need) else f"{need} is not installed"
    probe = subprocess.run(
        [NVCC, "-E", "-x", "cu", "-"],
        input=f"#include <{need}>\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    return (
        None if probe.returncode == 0 else f"nvcc finds no {need}: the family's CUDA library is not installed"
    )


def _copy(tmp: Path, folder: Path) -> Task:
    target = tmp / "data" / folder.name
    shutil.copytree(folder, target)
    return load_task(target)


def _attempt(tmp: Path, task: Task, code: str) -> tuple[Ran, Verdict]:
    tc = LocalToolchain(LocalConfig(base_dir=tmp / "work"))
    events = list(tc.attempt(task, code, AttemptOptions(iteration=1, gate=0.0)))
    (ran,) = [e for e in events if isinstance(e, Ran)]
    (verdict,) = [e for e in events if isinstance(e, Verdict)]
    return ran, verdict


@pytest.mark.parametrize("case", list(CASES))
def test_a_constructor_that_passes_before_the_release_harness_main_is_not_a_pass(
    tmp_path: Path, case: str
) -> None:
    folder, need = CASES[case]
    why = _missing(need)
    if why is not None:
        pytest.skip(why)
    task = _copy(tmp_path, folder)
    assert families.family_of(task).harness_proof
    ran, verdict = _attempt(tmp_path, task, (task.reference() or "") + CONSTRUCTOR)
    assert ran.result.rc == 0 and "All tests passed!" in ran.result.log, ran.result.log  # what passed before
    assert (ran.result.harness_proof or "").startswith("skipped: "), ran.result.harness_proof
    assert not verdict.correct and not verdict.success and verdict.reason == "harness skipped"
    assert "harness_skipped" in [f.name for f in verdict.flags]


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_the_reference_through_the_real_release_harness_has_the_proof_ran(tmp_path: Path, case: str) -> None:
    """On a GPU: each family's real harness, judging its reference, returns from main (no false alarm)."""
    folder, need = CASES[case]
    why = _missing(need)
    if why is not None:
        pytest.skip(why)
    task = _copy(tmp_path, folder)
    ran, verdict = _attempt(tmp_path, task, task.reference() or "")
    assert ran.result.rc == 0 and ran.result.harness_proof == "ran", (
        ran.result.harness_proof,
        ran.result.log,
    )
    assert verdict.correct and "harness_skipped" not in [f.name for f in verdict.flags]


HOST_ONLY = """// A host-only stand-in for the testbench's main: its checks need no GPU.
#include <cstdio>
#include <cstdlib>
int main() {
    std::printf("%s\\n", BEAVER_FAILS ? "check failed" : "all checks passed");
    if (BEAVER_FAILS) exit(EXIT_FAILURE);  // as the release's CUDA_CHECK macros end a failure
    return 0;
}
"""


def _host_only(tmp: Path, fail: bool) -> Task:
    task = _copy(tmp, CASES["cuda"][0])
    main = task.testbench / "test" / "test_main.cu"
    main.write_text(f"#define BEAVER_FAILS {int(fail)}\n" + HOST_ONLY)
    return load_task(task.testbench.parent)


def test_an_honest_release_harness_run_has_the_proof_ran(tmp_path: Path) -> None:
    task = _host_only(tmp_path, fail=False)
    ran, verdict = _attempt(tmp_path, task, task.reference() or "")
    assert ran.result.rc == 0 and ran.result.harness_proof == "ran", ran.result.log
    assert verdict.correct and not verdict.flags


def test_a_release_harness_that_fails_by_exit_keeps_its_own_failure(tmp_path: Path) -> None:
    """exit(1) from inside main is no harness skipped: the run failed on its own, and is judged by that."""
    task = _host_only(tmp_path, fail=True)
    ran, verdict = _attempt(tmp_path, task, task.reference() or "")
    assert ran.result.rc == 1 and "check failed" in ran.result.log
    assert (ran.result.harness_proof or "").startswith("skipped: ")  # main did not return
    assert not verdict.correct and verdict.reason != "harness skipped"
    assert "harness_skipped" not in [f.name for f in verdict.flags]


@pytest.mark.parametrize(
    ("instance", "covered"),
    [
        ("cuda_104__compile_error__f8160fc8", True),
        ("cublas_level1_10__compile_error__d6b7227b", True),
        ("cusparse_4__compile_error__cfcd99f6", True),
        ("cufft_1__compile_error__611168ad", True),
        ("cudabench_72__memory_crash__32cc9e41", False),  # the candidate's file is the whole program
        ("kernelbench_level1_92__compile_error__52277656", False),  # a Python driver
        ("cutlass_05_batched_gemm__perf_broken__3742c34f", False),
        ("cufft_samples_c2c_1d_1024_fp32__perf_broken__8a23fb7d", False),
    ],
)
def test_which_release_families_carry_the_proof(instance: str, covered: bool) -> None:
    task = load_task(REAL / instance)
    assert families.family_of(task).harness_proof is covered
