"""kernelbench: the reference is the PyTorch eager ``Model`` of problem.py, a candidate a ``ModelNew`` built as a
torch extension; timed by kernelbench's own driver (docs/release-families.md, kernelbench)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import beavertui.engine.corpus.families.base as base
from beavertui.engine.corpus.families.base import Family
from beavertui.engine.corpus.task import Task

#: The line that turns the eager reference into a candidate (kernelbench reference submission).
KERNELBENCH_ALIAS = "ModelNew = Model  # reference submission: the eager PyTorch model itself"

#: Build step of the kernelbench reference submission: the file must parse, nothing else is checked.
_SYNTAX_ONLY = (
    "python -c \"import ast, pathlib; ast.parse(pathlib.Path('{file}').read_text(encoding='utf-8')); "
    "print('reference submission: static checker skipped (it applies to candidates only)')\""
)

#: After the static checker passes, the candidate's extension is compiled once on the CPU with the vendored
#: package's own pre-compile entry point (``build_compile_cache``: what its eval does before running, with
#: the same environment and architecture), no GPU visible. Best effort and silent: its output is dropped and
#: its failure ignored, so the build stage's log and verdict are the checker's alone; the eval in the test
#: stage finds the compiled extension in the work dir's torch extension folder and only loads it (or
#: compiles, and fails, as released).
_PREBUILD = (
    '( CUDA_VISIBLE_DEVICES= python -c "import signal; signal.alarm({limit}); from pathlib import Path; '
    "from kernelbench.utils import set_gpu_arch; {arch}from kernelbench.eval import build_compile_cache; "
    "build_compile_cache(Path('{file}').read_text(encoding='utf-8'), verbose=False)\" >/dev/null 2>&1 || true )"
)
_ARCH_CALL = re.compile(r"set_gpu_arch\(\s*\[[^\]]*\]\s*\)")

#: A kernel definition in CUDA source (inline in a Python string as well): its name.
_KERNEL = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+|inline\s+)*void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\("
)

#: The environment a kernelbench sanitizer run adds: PyTorch's caching allocator off, so that an access past
#: a tensor's end that stays inside a block the allocator cached is reported instead of hidden.
KERNELBENCH_SANITIZER_ENV = "PYTORCH_NO_CUDA_MEMORY_CACHING=1"

#: What a kernelbench sanitizer run checks, in one line (the start check's key and the docs).
KERNELBENCH_SANITIZER_SCOPE = "the candidate's own kernels, caching allocator off"


def kernelbench_compile_env(test_command: str) -> dict[str, str]:
    """The environment in which the release's kernelbench eval compiles a candidate's torch extension, for
    another process that loads the same candidate (the timing driver): the test command's
    ``set_gpu_arch([...])`` sets TORCH_CUDA_ARCH_LIST to the names it lists, and the eval (and the build
    stage's pre-build, prebuild_command) sets TORCH_USE_CUDA_DSA=1 before it loads the candidate. Loaded under
    another arch list, the extension is compiled again rather than loaded from the pre-build, inside the
    timing stage's GPU hold (docs/release-families.md, kernelbench)."""
    env = {"TORCH_USE_CUDA_DSA": "1"}
    arch = _ARCH_CALL.search(test_command)
    names = re.findall(r"""['"]([^'"]+)['"]""", arch.group(0)) if arch is not None else []
    if names:
        env["TORCH_CUDA_ARCH_LIST"] = ";".join(names)
    return env


def candidate_kernels(code: str) -> list[str]:
    """The names of the ``__global__`` functions ``code`` defines, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in _KERNEL.finditer(code)))


@dataclass(frozen=True)
class KernelBench(Family):
    """The eager Model is the reference (submitted verbatim with ``ModelNew = Model``, judged without the static
    checker); a candidate passing the checker is pre-built in the build stage; sanitizer runs check only the
    candidate's kernels; speed by kernelbench's timing driver."""

    def reference_submission(self, task: Task) -> str | None:
        """problem.py with ``ModelNew = Model`` appended."""
        ref = task.reference()
        return None if ref is None else ref.rstrip("\n") + "\n\n" + KERNELBENCH_ALIAS + "\n"

    def is_reference_submission(self, task: Task, code: str) -> bool:
        """Whether ``code`` is the reference submission, byte for byte (ignoring edge whitespace)."""
        ref = self.reference_submission(task)
        return ref is not None and code.strip() == ref.strip()

    def torch_equivalent(self, task: Task) -> Path | None:
        """The eager Model of testbench/problem.py."""
        problem = task.testbench / "problem.py"
        return problem if problem.is_file() else None

    def why_no_torch_equivalent(self, task: Task) -> str:
        return "no testbench/problem.py"

    def prebuild_command(self, task: Task) -> str | None:
        """The silent pre-build step appended to a candidate's build command (None: a test command that names
        no architecture to build for, or that is not the release's eval)."""
        if "eval_kernel_against_ref" not in task.test_command:
            return None
        arch = _ARCH_CALL.search(task.test_command)
        if arch is None:
            return None
        return _PREBUILD.format(limit=base.PREBUILD_S, arch=f"{arch.group(0)}; ", file=task.solution_file)

    def for_code(self, task: Task, code: str) -> Task:
        """The reference submission skips the release's static checker (whose rules reject the eager model by
        design); a candidate that passes the checker is compiled in the build stage (prebuild_command), so
        that its test stage holds a GPU slot to run, not to wait on the compiler."""
        if self.is_reference_submission(task, code):
            return replace(task, build_command=_SYNTAX_ONLY.format(file=task.solution_file))
        pre = self.prebuild_command(task)
        if pre is not None:
            return replace(task, build_command=f"{task.build_command} && {pre}")
        return task

    def build_is_path_bound(self, task: Task) -> bool:
        """A candidate's pre-build compiles with torch's extension builder, which records absolute paths."""
        pre = self.prebuild_command(task)
        return pre is not None and pre in task.build_command

    def sanitizer_scope(self, task: Task, code: str) -> tuple[tuple[str, ...], str]:
        """kernelbench runs the eager reference beside the candidate in one process: under memcheck every cuDNN
        and cuBLAS kernel of the reference is instrumented, enough to run a conv task's check into its time
        limit with nothing reported (docs/release-families.md). The candidate's kernels are what the feedback
        is about, so a run checks only the kernels the candidate defines (a kernel filter per name, matched as
        it appears in the mangled name: its length, then the name; exactly, for ``extern "C"`` code); the
        others run unchecked. It runs with PyTorch's caching allocator off. A candidate that defines no kernel
        is checked whole."""
        unmangled = 'extern "C"' in code
        opts: list[str] = []
        for name in candidate_kernels(code):
            opts += ["--kernel-name", f"kns={len(name)}{name}"]
            if unmangled:
                opts += ["--kernel-name", f"kne={name}"]
        return tuple(opts), KERNELBENCH_SANITIZER_ENV

    @property
    def sanitizer_scope_rule(self) -> str | None:
        return KERNELBENCH_SANITIZER_SCOPE


KERNELBENCH = KernelBench(
    "kernelbench", "eager_model", "kernelbench_driver",
    "the PyTorch eager Model of problem.py (ModelNew = Model); the static checker is for candidates only",
    language="python", needs_torch=True, prefix="kernelbench",
)  # fmt: skip
