"""A kernelbench candidate's extension is compiled in the build stage, silently and at best effort.

The release's test command (the vendored package's eval) compiles the candidate and then runs it, so in a
batch each run held a GPU slot for the compile (about a minute per candidate on the H200). After the static
checker passes, the build stage now calls the package's own pre-compile entry point (build_compile_cache)
with no GPU visible and the test command's architecture; the eval then finds the extension built in the work
dir. These tests run the real build stage against a stand-in kernelbench package that records what it saw.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from beavertui.engine.corpus import families
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.session.events import Built, Ran
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalConfig, LocalToolchain

ROOT = Path(__file__).resolve().parents[3]
KB = "kernelbench_level2_63__logic_error__6e3c1c0a"

STAND_IN = {
    "__init__.py": "",
    "kernel_static_checker.py": (
        "def validate_kernel_static(src, backend='cuda', precision='fp32'):\n"
        "    ok = 'REJECT' not in src\n"
        "    return ok, ([] if ok else ['rejected by the checker']), []\n"
    ),
    "utils.py": "import os\ndef set_gpu_arch(archs):\n    os.environ['TORCH_CUDA_ARCH_LIST'] = ';'.join(archs)\n",
    "eval.py": (
        "import json, os, sys, time\n"
        "def build_compile_cache(src, verbose=False, build_dir=None):\n"
        "    print('compiler chatter'); print('more chatter', file=sys.stderr)\n"
        "    open('prebuilt.json', 'w').write(json.dumps({'arch': os.environ.get('TORCH_CUDA_ARCH_LIST'),\n"
        "        'gpus': os.environ.get('CUDA_VISIBLE_DEVICES')}))\n"
        "    if 'HANG' in src: time.sleep(60)\n"
        "    if 'FAIL' in src: raise RuntimeError('nvcc failed')\n"
        "    return True, '', None\n"
        "class R:\n    compiled = True\n    correctness = True\n"
        "def get_torch_dtype_from_string(s): return s\n"
        "def eval_kernel_against_ref(**kw): return R()\n"
    ),
}


@pytest.fixture()
def kb(tmp_path: Path) -> Task:
    vendor = tmp_path / "_vendor" / "kernelbench"
    vendor.mkdir(parents=True)
    for name, text in STAND_IN.items():
        (vendor / name).write_text(text)
    task = next(t for t in load_corpus(ROOT / "tests" / "data" / "release_real").tasks if t.id == KB)
    return replace(task, pythonpath=(tmp_path / "_vendor",))


def _build(task: Task, code: str, tmp_path: Path) -> tuple[Built, Path, str]:
    """The build stage's event, the kept work dir, and the test command as run ('' when it did not run)."""
    tool = LocalToolchain(LocalConfig(base_dir=tmp_path / "work"))
    options = AttemptOptions(iteration=1, gate=0.0, time_if_correct=False, sanitize_on_failure=False,
                             keep_workdir=True)  # fmt: skip
    events = list(tool.attempt(task, code, options))
    built = next(e for e in events if isinstance(e, Built))
    ran = next((e for e in events if isinstance(e, Ran)), None)
    assert tool.last_workdir is not None
    return built, Path(tool.last_workdir), (ran.result.command or "") if ran is not None else ""


def test_a_candidate_that_passes_the_checker_is_compiled_with_no_gpu_and_the_test_commands_arch(
    kb: Task, tmp_path: Path
) -> None:
    built, work, test = _build(kb, kb.broken_start(), tmp_path)
    assert built.result.rc == 0
    assert "chatter" not in built.result.log  # the build log is the checker's alone
    seen = json.loads((work / "prebuilt.json").read_text())
    arch = re.search(r"set_gpu_arch\(\['(\w+)'\]\)", test)
    assert arch is not None and seen["arch"] == arch.group(1)  # as the test command (adapted to this machine)
    assert seen["gpus"] == ""


@pytest.mark.parametrize("code", ["# FAIL\n", "# HANG\n"])
def test_a_prebuild_that_fails_or_hangs_never_decides_the_build(
    kb: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    monkeypatch.setattr(families.base, "PREBUILD_S", 2)
    built, work, _ = _build(kb, kb.broken_start() + code, tmp_path)
    assert built.result.rc == 0 and not built.result.timed_out and built.result.duration_s < 30
    assert (work / "prebuilt.json").is_file()


def test_a_candidate_the_checker_rejects_is_not_compiled(kb: Task, tmp_path: Path) -> None:
    built, work, _ = _build(kb, kb.broken_start() + "# REJECT\n", tmp_path)
    assert built.result.rc == 1 and "rejected by the checker" in built.result.log
    assert not (work / "prebuilt.json").exists()


def test_the_reference_submission_and_other_families_get_no_prebuild(kb: Task) -> None:
    ref = families.reference_submission(kb)
    assert ref is not None and "build_compile_cache" not in families.for_code(kb, ref).build_command
    cuda = next(t for t in load_corpus(ROOT / "tests" / "data" / "release_real").tasks if t.family == "cuda")
    assert families.for_code(cuda, cuda.broken_start()).build_command == cuda.build_command
    adapted = adapt_command(families.for_code(kb, kb.broken_start()).build_command, 90)
    assert adapted.count("set_gpu_arch(['Hopper'])") == 1 and " python " not in adapted
