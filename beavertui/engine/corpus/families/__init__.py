"""Task families as objects (docs/release-families.md): each kind of task is one ``Family`` that owns what the
generic loop cannot guess, in a module of its own.

- what the reference is (a drop-in solution, the PyTorch eager ``Model``, the CUTLASS kernel compiled into
  the testbench, the applied runner's reference.cu, or nothing at all) and its form as a candidate;
- how its tasks are built (the task's own commands, kernelbench's pre-build, the applied runner's
  commands; which release libraries they link);
- how a run's verdict is read (its exit status, or the ``T``/``F`` cudabench's comparison script prints) and
  what compute-sanitizer checks;
- how its speed is measured (``Family.speed``; timing/registry.py maps it to the TimingMethod).

``family_of(task)`` is the one place a task's family is decided: the bundled tasks are all ``BUNDLED``
(drop-in), a release task is the registered family that claims its ``task_family`` and level (``FAMILIES``:
exactly one claims each family of the release, tests/engine/corpus/test_family_objects.py), and a family the
release adds later is drop-in, or applied when its level is the applied-kernels one. The functions below
taking a task (``reference_submission(task)``...) are ``family_of(task)``'s methods, for callers that hold
a task. Adding a family is one module with a Family (sub)class and one line in ``FAMILIES``.

This package reads files and text only; it runs nothing.
"""

from __future__ import annotations

from functools import lru_cache

from beavertui.engine.corpus.families.applied import (
    APPLIED_KEPT_BUILDS,
    APPLIED_PREBUILD,
    CUFFT_SAMPLES,
    FLASHATTENTION,
    LAYERNORM,
    Applied,
    applied_commands,
    applied_family,
    applied_missing_sources,
    applied_reference_includes,
)
from beavertui.engine.corpus.families.base import (
    APPLIED_LEVEL,
    NO_REFERENCE,
    Family,
    ReferenceKind,
    SpeedKind,
)
from beavertui.engine.corpus.families.cudabench import CUDABENCH, CudaBench, cudabench_verdict
from beavertui.engine.corpus.families.cutlass import CUTLASS, Cutlass
from beavertui.engine.corpus.families.dependencies import (
    PACKAGE_OF,
    dependency_lines,
    describe_missing,
    missing_python_modules,
    python_files,
)
from beavertui.engine.corpus.families.kernelbench import (
    KERNELBENCH,
    KERNELBENCH_ALIAS,
    KERNELBENCH_SANITIZER_ENV,
    KERNELBENCH_SANITIZER_SCOPE,
    KernelBench,
    candidate_kernels,
    kernelbench_compile_env,
)
from beavertui.engine.corpus.families.speed_lines import SpeedLines, parse_speed_lines
from beavertui.engine.corpus.families.thunderkittens import THUNDERKITTENS, ThunderKittens
from beavertui.engine.corpus.task import Task

__all__ = [
    "APPLIED_KEPT_BUILDS",
    "APPLIED_LEVEL",
    "APPLIED_PREBUILD",
    "BUNDLED",
    "FAMILIES",
    "KERNELBENCH_ALIAS",
    "KERNELBENCH_SANITIZER_ENV",
    "KERNELBENCH_SANITIZER_SCOPE",
    "NO_REFERENCE",
    "PACKAGE_OF",
    "Applied",
    "CudaBench",
    "Cutlass",
    "Family",
    "KernelBench",
    "ReferenceKind",
    "SpeedKind",
    "SpeedLines",
    "ThunderKittens",
    "applied_commands",
    "applied_missing_sources",
    "applied_reference_includes",
    "build_is_path_bound",
    "candidate_kernels",
    "cudabench_verdict",
    "dependency_lines",
    "describe_missing",
    "drop_in",
    "family_for",
    "family_of",
    "for_code",
    "is_reference_submission",
    "kernelbench_compile_env",
    "missing_python_modules",
    "oracle_failure",
    "parse_speed_lines",
    "prebuild_command",
    "python_files",
    "reference_submission",
    "sanitizer_scope",
    "sanitizer_scope_rule",
    "why_no_reference_submission",
]  # fmt: skip


def drop_in(name: str, harness_proof: bool = False) -> Family:
    """The drop-in family called ``name``: the reference is a drop-in solution, timed in turn with the candidate."""
    return Family(name, names=frozenset({name}), level=False, harness_proof=harness_proof)


#: The bundled corpus: every task drop-in, whatever its ``task_family`` (recorded as ``drop-in``).
BUNDLED = Family("drop-in", layout="native", harness_proof=True)

#: The families of the release, each claiming its own ``task_family`` values (and level), none another's.
FAMILIES: tuple[Family, ...] = (
    BUNDLED,
    # nvcc-built testbenches whose main returns the verdict: in the release 81 instances, 237 testbench files,
    # none calls exit(0), exit(EXIT_SUCCESS), _exit or quick_exit on a passing path (harness proof)
    drop_in("cuda", harness_proof=True),
    drop_in("cublas", harness_proof=True),
    drop_in("cufft", harness_proof=True),
    drop_in("cusolver", harness_proof=True),
    drop_in("cusparse", harness_proof=True),
    KERNELBENCH,
    CUTLASS,
    CUDABENCH,
    THUNDERKITTENS,
    FLASHATTENTION,
    LAYERNORM,
    CUFFT_SAMPLES,
)


@lru_cache(maxsize=256)
def family_for(layout: str, family: str, level: str | None) -> Family:
    """The family of a task of ``layout`` whose metadata says ``task_family`` ``family`` and ``level``."""
    for fam in FAMILIES:
        if fam.claims(layout, family, level):
            return fam
    name = family.lower()  # one the release adds: applied by its level, else drop-in
    return applied_family(name) if level == APPLIED_LEVEL else drop_in(name)


def family_of(task: Task) -> Family:
    """The family of ``task``."""
    return family_for(task.layout, task.family, task.level)


def reference_submission(task: Task) -> str | None:
    """The reference in the form a candidate takes, or None when the family has none (Family's method)."""
    return family_of(task).reference_submission(task)


def why_no_reference_submission(task: Task) -> str:
    return family_of(task).why_no_reference_submission(task)


def is_reference_submission(task: Task, code: str) -> bool:
    return family_of(task).is_reference_submission(task, code)


def prebuild_command(task: Task) -> str | None:
    return family_of(task).prebuild_command(task)


def for_code(task: Task, code: str) -> Task:
    """The task as the toolchain must run it for ``code`` (Family.for_code)."""
    return family_of(task).for_code(task, code)


def build_is_path_bound(task: Task) -> bool:
    return family_of(task).build_is_path_bound(task)


def sanitizer_scope(task: Task, code: str) -> tuple[tuple[str, ...], str]:
    return family_of(task).sanitizer_scope(task, code)


def sanitizer_scope_rule(task: Task) -> str | None:
    return family_of(task).sanitizer_scope_rule


def oracle_failure(task: Task, rc: int | None, log: str) -> str | None:
    return family_of(task).oracle_failure(task, rc, log)
