"""Family: what a kind of task's reference is, how its tasks are built, how a run's verdict is read and how its
speed is measured. This base class is the drop-in family (the bundled tasks, and the release's CUDA, cuBLAS,
cuFFT, cuSOLVER and cuSPARSE tasks): the reference is a drop-in solution, the build and test commands are
the task's own, a run's exit status is its verdict, the whole test command is sanitized, and the two sides
are timed in turn (``interleaved``). Each other family is a subclass that overrides what it does differently,
in a module of its own (kernelbench.py, cutlass.py, cudabench.py, applied.py, thunderkittens.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from beavertui.engine.corpus.task import Task

if TYPE_CHECKING:
    from beavertui.engine.corpus.meta import InputMeta
    from beavertui.engine.host.gpu import Machine

ReferenceKind = Literal["drop_in", "eager_model", "in_binary", "none", "applied_runner"]
SpeedKind = Literal["interleaved", "kernelbench_driver", "testbench_lines", "none"]

#: Reason a correct attempt of a family without a reference has no speedup.
NO_REFERENCE = "no reference exists for this family: speedup undefined"

#: The release level of the applied-kernels tasks (def.py + testbench/reference.cu, run by the release's runner).
APPLIED_LEVEL = "applied_kernels_class"

#: Seconds a pre-build in the build stage may take (kernelbench's extension, the applied runner's two
#: kernels); well inside the build stage's own limit, so that a slow compile is never the build stage's
#: time-out (the test stage then compiles, as released).
PREBUILD_S = 200

#: What a family's ``runner_commands`` gives: (runnable, why not, build command, test command, PYTHONPATH).
RunnerCommands = tuple[bool, "str | None", str, str, tuple[Path, ...]]


@dataclass(frozen=True)
class Family:
    """A kind of task. ``name``, ``reference`` and ``speed`` are recorded (stored verdicts, baselines' share
    key): they keep the values they had when families were strings."""

    name: str
    """The family's name as recorded (``drop-in`` for the bundled tasks)."""
    reference: ReferenceKind = "drop_in"
    """What the reference is."""
    speed: SpeedKind = "interleaved"
    """How a speedup is measured; timing/registry.py maps it to the TimingMethod that measures it."""
    summary: str = "reference.cu is a drop-in solution"
    """One line for tables: what the reference is."""
    language: str = "cuda"
    """The language of a candidate, where no task says it (an imported run without its corpus)."""
    needs_torch: bool = False
    """Whether its tasks need torch importable, whatever their commands say."""
    libraries: frozenset[str] = frozenset()
    """The release libraries (``data/_external``: ``cutlass``, ``ThunderKittens``) its tasks always need."""
    harness_proof: bool = False
    """Whether a correctness run carries a harness proof (engine/judge/harness_proof.py): the family's harness
    is the testbench's own ``main``, built by nvcc into an executable of the work dir, whose exit status is the
    verdict and which ends a passing run by returning from ``main``. Not cudabench (the candidate's file is
    the whole program), the Python drivers (kernelbench, the applied runner), cutlass and thunderkittens
    (their harnesses build against the release's bundled sources; docs/security.md)."""
    layout: str = "release"
    """The corpus layout whose tasks it claims (``native``: the bundled layout)."""
    names: frozenset[str] = frozenset()
    """The ``task_family`` values it claims (lower case); empty: every one of its layout."""
    prefix: str | None = None
    """A ``task_family`` prefix it claims instead of names (``kernelbench`` claims ``kernelbench_level1``)."""
    level: bool | None = None
    """True: it claims only applied-kernels tasks (``level == applied_kernels_class``); False: only others;
    None: either."""

    def claims(self, layout: str, family: str, level: str | None) -> bool:
        """Whether a task of ``layout`` with this ``task_family`` and ``level`` is of this family."""
        if layout != self.layout:
            return False
        fam = family.lower()
        if self.prefix is not None and not fam.startswith(self.prefix):
            return False
        if self.names and fam not in self.names:
            return False
        return self.level is None or self.level == (level == APPLIED_LEVEL)

    # ------------------------------------------------------------------ the reference

    def reference_submission(self, task: Task) -> str | None:
        """The reference in the form a candidate takes, or None when the family has none."""
        return task.reference()

    def why_no_reference_submission(self, task: Task) -> str:
        """Why ``reference_submission`` is None."""
        return "no reference solution shipped"

    def is_reference_submission(self, task: Task, code: str) -> bool:
        """Whether ``code`` is the reference submission judged under the family's reference semantics."""
        return False

    # ------------------------------------------------------------------ how it builds

    def runner_commands(
        self, task_dir: Path, root: Path, inp: InputMeta, pythonpath: tuple[Path, ...]
    ) -> RunnerCommands | None:
        """Build and test commands the family makes for a task instead of the task's own (None: its own)."""
        return None

    def needs_library(self, lib: str, inp: InputMeta) -> bool:
        """Whether a linked release library (``cutlass``, ``ThunderKittens``) is required by a task."""
        if lib == "ThunderKittens":
            return lib in self.libraries or inp.has_thunderkittens
        return (
            lib in self.libraries or f"reference_sources/{lib}/" in f"{inp.build_command} {inp.test_command}"
        )

    def prebuild_command(self, task: Task) -> str | None:
        """A step appended to a candidate's build command that compiles what the test would (None: none)."""
        return None

    def for_code(self, task: Task, code: str) -> Task:
        """The task as the toolchain must run it for ``code`` (unchanged by default)."""
        return task

    def build_is_path_bound(self, task: Task) -> bool:
        """Whether what the build stage makes serves only the work dir that made it (so a compile cache must
        not restore it into another)."""
        return False

    def runnable_here(self, task: Task, machine: Machine) -> str | None:
        """Why the family's ``task`` cannot run on ``machine`` beyond what every task needs, or None."""
        return None

    def torch_equivalent(self, task: Task) -> Path | None:
        """The release file holding the task's PyTorch equivalent (a module with a ``Model``: a named
        baseline, timing/named_baselines.py), or None."""
        return None

    def why_no_torch_equivalent(self, task: Task) -> str:
        """Why ``torch_equivalent`` is None."""
        return f"family {self.name}: no PyTorch equivalent (only kernelbench has one)"

    # ------------------------------------------------------------------ how a verdict is read

    def oracle_failure(self, task: Task, rc: int | None, log: str) -> str | None:
        """A signature when the family's own oracle says a run that exited 0 is wrong; None otherwise."""
        return None

    def sanitizer_scope(self, task: Task, code: str) -> tuple[tuple[str, ...], str]:
        """compute-sanitizer options and an environment prefix that scope a sanitizer run of ``code``
        (the whole test command, unchanged, by default: the test binary is the candidate's)."""
        return (), ""

    @property
    def sanitizer_scope_rule(self) -> str | None:
        """The sanitizer scope in one line (None: the whole test command is checked)."""
        return None

    # ------------------------------------------------------------------ how its speed is measured

    @property
    def timed(self) -> bool:
        """Whether a correct candidate has a speedup to measure (a reference to time against)."""
        return self.speed != "none"
