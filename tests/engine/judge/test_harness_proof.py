"""A candidate cannot produce the harness's verdict alone: built by the real nvcc, run on the CPU.

Two cheats from a hostile run, judged passed, correct and unflagged before:

- a static constructor that prints PASS and calls ``_exit(0)`` before the harness's ``main`` runs (it needs
  no GPU: it ends the process before any CUDA call, so the whole attempt runs here as on an H200);
- ``#include`` of the installed reference behind ``__has_include``.

The first is caught after the run by the harness proof (engine/judge/harness_proof.py: a per-run token that
only the harness's own return from ``main`` writes back), the second by the static include check. A host-only
harness (the transpose fixture's, with a ``main`` that needs no GPU) shows the honest side: its proof is
``ran`` and its run passes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_task
from beavertui.engine.judge import anticheat, harness_proof
from beavertui.engine.session.events import Ran, Verdict
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "data" / "cheats" / "transpose_small"
REFERENCE = (FIXTURE / "reference.cu").read_text()

# 33 s in a serial run on a loaded 2-core machine: a parallel run starts it early
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed"),
]

CONSTRUCTOR_CHEAT = (
    REFERENCE
    + """
#include <cstdio>
#include <unistd.h>
__attribute__((constructor)) static void beaver_wins() {
    std::printf("transpose: all checks PASSED\\n");
    std::fflush(stdout);
    _exit(0);
}
"""
)

HOST_ONLY_MAIN = """// A host-only harness: its checks need no GPU, so the proof's honest side runs on any machine.
#include <cstdio>
int main() {
    int failures = 0;
    for (int i = 0; i < 4; ++i) failures += (i * i < 0);
    std::printf(failures ? "FAILED\\n" : "all checks passed\\n");
    return failures ? 1 : 0;
}
"""


def _task(tmp: Path, host_only: bool) -> object:
    folder = tmp / "transpose_small"
    shutil.copytree(FIXTURE, folder)
    if host_only:
        (folder / "testbench" / "test_main.cu").write_text(HOST_ONLY_MAIN)
    return load_task(folder, root=ROOT / "corpus")


def _attempt(tmp: Path, code: str, host_only: bool) -> tuple[Ran, Verdict]:
    task = _task(tmp, host_only)
    tc = LocalToolchain(LocalConfig(base_dir=tmp / "work"))
    events = list(tc.attempt(task, code, AttemptOptions(iteration=1, gate=0.0)))  # type: ignore[arg-type]
    (ran,) = [e for e in events if isinstance(e, Ran)]
    (verdict,) = [e for e in events if isinstance(e, Verdict)]
    return ran, verdict


def test_a_constructor_that_prints_pass_and_exits_before_main_is_not_a_pass(tmp_path: Path) -> None:
    ran, verdict = _attempt(tmp_path, CONSTRUCTOR_CHEAT, host_only=False)
    assert ran.result.rc == 0 and "PASSED" in ran.result.log  # what the harness would have said
    assert ran.result.harness_proof is not None and ran.result.harness_proof.startswith("skipped: ")
    assert not verdict.correct and not verdict.success
    assert verdict.category == "functional_correctness" and verdict.reason == "harness skipped"
    assert "harness_skipped" in [f.name for f in verdict.flags]


def test_the_harness_proof_of_an_honest_run_is_ran(tmp_path: Path) -> None:
    ran, verdict = _attempt(tmp_path, REFERENCE, host_only=True)
    assert ran.result.rc == 0 and ran.result.harness_proof == "ran", ran.result.log
    assert verdict.correct and verdict.category == "passed" and not verdict.flags


def test_the_token_is_out_of_the_candidates_reach_before_main(tmp_path: Path) -> None:
    """A constructor that looks for the token in the environment, and in /proc/self/environ, finds neither."""
    probe = (
        REFERENCE
        + """
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
__attribute__((constructor)) static void beaver_probe() {
    const char* t = std::getenv("BEAVER_PROOF");
    char buf[65536] = {0};
    FILE* f = std::fopen("/proc/self/environ", "rb");
    size_t n = f ? std::fread(buf, 1, sizeof buf - 1, f) : 0;
    for (size_t i = 0; i < n; ++i) if (!buf[i]) buf[i] = '\\n';
    std::printf("probe getenv=%s environ_has_token=%d\\n", t ? t : "(none)",
                std::strstr(buf, "BEAVER_PROOF=") != nullptr && std::strstr(buf, "BEAVER_PROOF=xx") == nullptr);
}
"""
    )
    ran, _verdict = _attempt(tmp_path, probe, host_only=True)
    assert "probe getenv=(none) environ_has_token=0" in ran.result.log, ran.result.log
    assert ran.result.harness_proof == "ran"


def test_including_the_installed_reference_behind_has_include_is_flagged(tmp_path: Path) -> None:
    installed = FIXTURE / "reference.cu"  # where the corpus is installed: readable from inside the stage
    cheat = f"""#include "transpose_api.h"
#if __has_include("{installed}")
#  include "{installed}"
#else
#  include "../../reference.cu"
#endif
"""
    ran, verdict = _attempt(tmp_path, cheat, host_only=True)
    assert (
        ran.result.rc == 0 and ran.result.harness_proof == "ran"
    )  # it builds and runs: only the source shows it
    assert not verdict.correct and verdict.reason == "foreign include"
    (flag,) = [f for f in verdict.flags if f.name == "foreign_include"]
    assert str(installed) in flag.detail and "../../reference.cu" in flag.detail


@pytest.mark.parametrize(
    "line",
    ['#include "test_main.cu"', "#include <../testbench/transpose.cuh>", '# include "reference.cu"',
     '#if __has_include("/abs/reference.cu")\n#endif', '#include "helpers.cpp"'],
)  # fmt: skip
def test_the_include_check_names_harness_reference_and_outside_files(line: str) -> None:
    flags = anticheat.include_flags(
        line + "\n", '#include "transpose_api.h"\n', ["reference.cu", "test_main.cu"]
    )
    assert [f.name for f in flags] == ["foreign_include"], line


def test_the_include_check_accepts_what_the_broken_start_includes() -> None:
    honest = '#include "transpose_api.h"\n#include <cuda_fp16.h>\n// #include "../reference.cu"\n'
    assert anticheat.include_flags(honest, '#include "transpose_api.h"\n', ["reference.cu"]) == []


def test_the_proof_library_builds_with_the_host_compiler(tmp_path: Path) -> None:
    lib = harness_proof.library(tmp_path)
    assert lib is not None and lib.is_file() and lib.parent == tmp_path
