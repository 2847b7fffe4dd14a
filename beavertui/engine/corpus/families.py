"""Reference semantics of each task family of the CUDABeaver release (docs/release-families.md).

A release task names a family (``task_family``), and the family decides three things the generic loop
cannot guess: what the reference is (a drop-in solution, the PyTorch eager ``Model``, the CUTLASS kernel
compiled into the testbench, or nothing at all), how a candidate's correctness is read from the harness
(its exit status, or the ``T``/``F`` printed by cudabench's comparison script), and how a speedup is
measured (interleaved CUPTI records, an in-process eager-vs-candidate driver, or the testbench's own
speed lines). Native tasks are always drop-in. This module reads files and text only; it runs nothing.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import re
import shlex
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

from beavertui.engine.corpus.task import Task

ReferenceKind = Literal["drop_in", "eager_model", "in_binary", "none", "applied_runner"]
SpeedKind = Literal["interleaved", "kernelbench_driver", "testbench_lines", "none"]

#: Reason a correct attempt of a family without a reference has no speedup.
NO_REFERENCE = "no reference exists for this family: speedup undefined"

#: The line that turns the eager reference into a candidate (kernelbench reference submission).
KERNELBENCH_ALIAS = "ModelNew = Model  # reference submission: the eager PyTorch model itself"


@dataclass(frozen=True)
class Semantics:
    """What a family's reference is and how its candidates are checked and timed."""

    family: str
    reference: ReferenceKind
    speed: SpeedKind
    summary: str
    """One line for tables: what the reference is."""


_DROP_IN = Semantics("drop-in", "drop_in", "interleaved", "reference.cu is a drop-in solution")


def semantics(task: Task) -> Semantics:
    """The reference semantics of ``task`` (native tasks and unknown families are drop-in)."""
    if task.layout == "native":
        return _DROP_IN
    fam = task.family.lower()
    if fam.startswith("kernelbench"):
        return Semantics(
            "kernelbench", "eager_model", "kernelbench_driver",
            "the PyTorch eager Model of problem.py (ModelNew = Model); the static checker is for candidates only",
        )  # fmt: skip
    if fam == "cutlass":
        return Semantics(
            "cutlass", "in_binary", "testbench_lines",
            "the CUTLASS kernel compiled into the testbench; its Ref time / Kernel time / Speedup lines",
        )  # fmt: skip
    if fam == "cudabench":
        return Semantics("cudabench", "none", "none", "none: compare_output.py's T/F is the only oracle")
    if task.level == "applied_kernels_class":
        return Semantics(
            fam, "applied_runner", "testbench_lines",
            "testbench/reference.cu compiled by the release's applied-kernels runner beside the candidate",
        )  # fmt: skip
    if fam == "thunderkittens":
        return Semantics(fam, "drop_in", "interleaved", "the testbench's own kernel file (drop-in)")
    return replace(_DROP_IN, family=fam)


# ------------------------------------------------------------------ the reference as a candidate


def reference_submission(task: Task) -> str | None:
    """The reference in the form a candidate takes, or None when the family has none.

    Drop-in families: the reference file. kernelbench: problem.py with ``ModelNew = Model`` appended, judged
    under the reference semantics (no static check) when submitted verbatim. cutlass (the reference is inside
    the testbench, not a ``solution.h``) and cudabench (no reference) have none.
    """
    sem = semantics(task)
    ref = task.reference()
    if ref is None or sem.reference in ("in_binary", "none"):
        return None
    if sem.reference == "eager_model":
        return ref.rstrip("\n") + "\n\n" + KERNELBENCH_ALIAS + "\n"
    return ref


def why_no_reference_submission(task: Task) -> str:
    sem = semantics(task)
    if sem.reference == "in_binary":
        return "the reference is the CUTLASS kernel inside the testbench, not a solution.h a model could submit"
    if sem.reference == "none":
        return "the family has no reference solution (reference.cu only points at the oracle)"
    return "no reference solution shipped"


def is_reference_submission(task: Task, code: str) -> bool:
    """Whether ``code`` is the kernelbench reference submission, byte for byte (ignoring edge whitespace)."""
    if semantics(task).reference != "eager_model":
        return False
    ref = reference_submission(task)
    return ref is not None and code.strip() == ref.strip()


#: Build step of the kernelbench reference submission: the file must parse, nothing else is checked.
_SYNTAX_ONLY = (
    "python -c \"import ast, pathlib; ast.parse(pathlib.Path('{file}').read_text(encoding='utf-8')); "
    "print('reference submission: static checker skipped (it applies to candidates only)')\""
)


#: Seconds the pre-build of a kernelbench candidate may take; well inside the build stage's own limit, so
#: that a slow compile is never the build stage's time-out (the test stage then compiles, as released).
PREBUILD_S = 200

#: After the static checker passes, the candidate's extension is compiled once on the CPU with the vendored
#: package's own pre-compile entry point (``build_compile_cache``: what its eval does before running, with
#: the same environment and architecture), no GPU visible. Best effort and silent: its output is dropped and
#: its failure ignored, so the build stage's log and verdict are the checker's alone; the eval in the test
#: stage finds the compiled extension in the work dir's torch extension folder and only loads it (or
#: compiles, and fails, as released).
_PREBUILD = (
    "( CUDA_VISIBLE_DEVICES= python -c \"import signal; signal.alarm({limit}); from pathlib import Path; "
    "from kernelbench.utils import set_gpu_arch; {arch}from kernelbench.eval import build_compile_cache; "
    "build_compile_cache(Path('{file}').read_text(encoding='utf-8'), verbose=False)\" >/dev/null 2>&1 || true )"
)
_ARCH_CALL = re.compile(r"set_gpu_arch\(\s*\[[^\]]*\]\s*\)")


def prebuild_command(task: Task) -> str | None:
    """The silent pre-build step appended to a kernelbench candidate's build command (None: other families,
    or a test command that names no architecture to build for)."""
    if semantics(task).family != "kernelbench" or "eval_kernel_against_ref" not in task.test_command:
        return None
    arch = _ARCH_CALL.search(task.test_command)
    if arch is None:
        return None
    return _PREBUILD.format(limit=PREBUILD_S, arch=f"{arch.group(0)}; ", file=task.solution_file)


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


def build_is_path_bound(task: Task) -> bool:
    """Whether what ``task``'s build stage makes (``for_code``'s task) serves only the work dir that made it:
    the applied runner's pre-build and a kernelbench candidate's pre-build compile with torch's extension
    builder, which records absolute paths (its build.ninja, the work dir's include folders), so that a build
    restored into another work dir is compiled again by the test run, while it holds a GPU slot
    (docs/release-families.md, applied families)."""
    if task.level == "applied_kernels_class":
        return True
    pre = prebuild_command(task)
    return pre is not None and pre in task.build_command


def for_code(task: Task, code: str) -> Task:
    """The task as the toolchain must run it for ``code``: the kernelbench reference submission skips the
    release's static checker (whose rules reject the eager model by design); a kernelbench candidate that
    passes the checker is compiled in the build stage (prebuild_command), so that its test stage holds a GPU
    slot to run, not to wait on the compiler; everything else is unchanged."""
    if is_reference_submission(task, code):
        return replace(task, build_command=_SYNTAX_ONLY.format(file=task.solution_file))
    pre = prebuild_command(task)
    if pre is not None:
        return replace(task, build_command=f"{task.build_command} && {pre}")
    return task


# ------------------------------------------------------------------ compute-sanitizer's scope


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


def candidate_kernels(code: str) -> list[str]:
    """The names of the ``__global__`` functions ``code`` defines, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in _KERNEL.finditer(code)))


def sanitizer_scope(task: Task, code: str) -> tuple[tuple[str, ...], str]:
    """compute-sanitizer options and an environment prefix that scope a sanitizer run of ``code``.

    kernelbench runs the eager reference beside the candidate in one process: under memcheck every cuDNN and
    cuBLAS kernel of the reference is instrumented, enough to run a conv task's check into its time limit
    with nothing reported (docs/release-families.md). The candidate's kernels are what the feedback is about, so a
    kernelbench run checks only the kernels the candidate defines (a kernel filter per name, matched as it
    appears in the mangled name: its length, then the name; exactly, for ``extern "C"`` code); the others
    run unchecked. It runs with PyTorch's caching allocator off. A candidate that defines no kernel is
    checked whole. Every other family is checked whole, unchanged: its test binary is the candidate's.
    """
    if semantics(task).family != "kernelbench":
        return (), ""
    unmangled = 'extern "C"' in code
    opts: list[str] = []
    for name in candidate_kernels(code):
        opts += ["--kernel-name", f"kns={len(name)}{name}"]
        if unmangled:
            opts += ["--kernel-name", f"kne={name}"]
    return tuple(opts), KERNELBENCH_SANITIZER_ENV


def sanitizer_scope_rule(task: Task) -> str | None:
    """The family's sanitizer scope in one line (None: the whole test command is checked)."""
    return KERNELBENCH_SANITIZER_SCOPE if semantics(task).family == "kernelbench" else None


# ------------------------------------------------------------------ correctness oracles


_TF = re.compile(r"^\s*([TF])\s*$", re.M)


def cudabench_verdict(log: str) -> bool | None:
    """The last ``T``/``F`` line compare_output.py printed (True, False), or None when it printed neither.

    The release's comparison script always exits 0, so its exit status says nothing; this line does."""
    hits = _TF.findall(log)
    return None if not hits else hits[-1] == "T"


def oracle_failure(task: Task, rc: int | None, log: str) -> str | None:
    """A signature when the family's own oracle says a run that exited 0 is wrong; None otherwise."""
    if rc != 0 or semantics(task).family != "cudabench":
        return None
    seen = cudabench_verdict(log)
    if seen is True:
        return None
    if seen is False:
        return "compare_output: F (output differs from the reference output)"
    return "compare_output printed neither T nor F"


# ------------------------------------------------------------------ testbench speed lines


_REF = re.compile(r"Ref time:\s*([0-9.eE+-]+)\s*ms(?:\s*\(avg over (\d+) trials, min:\s*([0-9.eE+-]+)\s*ms\))?")
_KER = re.compile(
    r"Kernel time:\s*([0-9.eE+-]+)\s*ms(?:\s*\(avg over (\d+) trials, min:\s*([0-9.eE+-]+)\s*ms\))?"
)
_SPD = re.compile(r"Speedup:\s*([0-9.eE+-]+|inf|nan)\s*x", re.I)


@dataclass(frozen=True)
class SpeedLines:
    """The speed lines of one testbench run, one entry per problem size."""

    reference_ms: tuple[float, ...]
    """Reference time per size (the min over the testbench's trials when printed, else its mean)."""
    candidate_ms: tuple[float, ...]
    """Candidate (``Kernel time``) per size, same rule."""
    speedups: tuple[float, ...]
    """The printed ``Speedup:`` per size."""

    @property
    def speedup(self) -> float | None:
        """Geometric mean of the per-size speedups (None without any positive one)."""
        good = [s for s in self.speedups if s > 0 and math.isfinite(s)]
        return math.exp(sum(math.log(s) for s in good) / len(good)) if good else None

    @staticmethod
    def _geo(xs: tuple[float, ...]) -> float | None:
        good = [x for x in xs if x > 0 and math.isfinite(x)]
        return math.exp(sum(math.log(x) for x in good) / len(good)) if good else None

    @property
    def reference(self) -> float | None:
        """Geometric mean of the reference times (ms); candidate x speedup when only those were printed
        (the applied runner prints ``Kernel time`` and ``Speedup``)."""
        got = self._geo(self.reference_ms)
        cand, sp = self._geo(self.candidate_ms), self.speedup
        return got if got is not None else (cand * sp if cand is not None and sp else None)

    @property
    def candidate(self) -> float | None:
        """Geometric mean of the candidate times (ms); reference / speedup when none was printed."""
        got = self._geo(self.candidate_ms)
        ref, sp = self._geo(self.reference_ms), self.speedup
        return got if got is not None else (ref / sp if ref is not None and sp else None)


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def parse_speed_lines(log: str) -> SpeedLines:
    """Every ``Ref time`` / ``Kernel time`` / ``Speedup`` line of a testbench log, in order."""
    ref = tuple(_num(m.group(3) or m.group(1)) for m in _REF.finditer(log))
    ker = tuple(_num(m.group(3) or m.group(1)) for m in _KER.finditer(log))
    spd = tuple(_num(m.group(1)) for m in _SPD.finditer(log))
    return SpeedLines(ref, ker, spd)


# ------------------------------------------------------------------ applied kernels (def.py)


_INCLUDES = re.compile(r"^REFERENCE_EXTRA_INCLUDES\s*=\s*(\[.*?\])", re.M | re.S)


def applied_reference_includes(task_dir: Path) -> list[str]:
    """The include folders def.py names for compiling testbench/reference.cu (relative to the work dir)."""
    try:
        text = (task_dir / "testbench" / "def.py").read_text(encoding="utf-8")
    except OSError:
        return []
    m = _INCLUDES.search(text)
    if not m:
        return []
    try:
        value = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in value if isinstance(v, str)]


def applied_missing_sources(task_dir: Path, data_root: Path) -> list[str]:
    """Reference include folders def.py needs that the release does not ship (its ``reference_sources/``
    holds only cutlass and ThunderKittens, linked from ``data/_external``)."""
    missing = []
    for inc in applied_reference_includes(task_dir):
        parts = Path(inc).parts
        if "reference_sources" in parts:
            rest = Path(*parts[parts.index("reference_sources") + 1 :])
            if not (data_root / "_external" / rest).exists() and not (task_dir / "testbench" / inc).exists():
                missing.append(f"reference_sources/{rest.as_posix()}")
        elif not (task_dir / "testbench" / inc).exists():
            missing.append(inc)
    return missing


#: Lines of the applied test command that keep the runner's builds across the runs of one work dir (the test
#: run, the sanitizer runs, the timing runs). As released, every run builds the candidate into a new temporary
#: folder, and writes the generated binding source of both extensions again, which makes ninja rebuild them
#: on every run (docs/release-families.md, applied families). Here the candidate builds into
#: ``.applied_builds/solution`` in the work dir (the reference already builds into the work dir's shadow
#: release root), and a source the runner writes again with unchanged content gets its first modification
#: time back, so ninja finds the build up to date. Any failure of this bookkeeping leaves the load as released.
#: Uses ``os`` and ``_ev`` (the runner's eval module) from the script around it.
APPLIED_KEPT_BUILDS = """\
import hashlib as _hl, json as _js
import harness.applied_kernels_runner.compiler as _cc
_kept_dir = os.path.abspath(".applied_builds")
def _same_sources(sources, build_directory):
    book = os.path.join(build_directory, ".beaver-sources.json")
    try:
        with open(book) as f:
            seen = _js.load(f)
    except Exception:
        seen = {}
    for s in map(os.path.abspath, sources):
        if os.path.dirname(s) != os.path.abspath(build_directory):
            continue
        with open(s, "rb") as f:
            h = _hl.sha256(f.read()).hexdigest()
        if s in seen and seen[s][0] == h:
            os.utime(s, ns=(seen[s][1], seen[s][1]))
        else:
            seen[s] = [h, os.stat(s).st_mtime_ns]
    with open(book, "w") as f:
        _js.dump(seen, f)
_load = _cc.load
def _kept_load(*a, **k):
    try:
        _same_sources(k.get("sources") or [], k["build_directory"])
    except Exception:
        pass
    return _load(*a, **k)
_cc.load = _kept_load
_compile = _ev.compile_cuda_module
def _kept_compile(*a, **k):
    b = k.get("build_dir")
    if b and os.path.basename(str(b)).startswith("applied_kernels_sol_"):
        k["build_dir"] = os.path.join(_kept_dir, "solution")
        os.makedirs(k["build_dir"], exist_ok=True)
    return _compile(*a, **k)
_ev.compile_cuda_module = _kept_compile
"""


#: Lines that end the applied-kernels runner right after it has built both kernels, before its first
#: correctness trial (the pre-build of the build stage): the task definition's input maker raises
#: ``_Prebuilt``, which no ``except Exception`` of the runner catches. No GPU is visible in the pre-build, so
#: the device index the runner asks for first is answered without CUDA (the builds depend on the arch list,
#: which the stage's environment sets, not on the device). Uses ``_ev`` from the script around it.
APPLIED_PREBUILD = """\
class _Prebuilt(BaseException):
    pass
def _no_trial(*a, **k):
    raise _Prebuilt()
_task_def = _ev.load_task_def
def _built_only(*a, **k):
    d = dict(_task_def(*a, **k))
    d["get_inputs"] = _no_trial
    return d
_ev.load_task_def = _built_only
import torch as _torch
_torch.cuda.current_device = lambda: 0
"""


def applied_commands(task_id: str, release_root: Path, timeout_s: int = 300) -> tuple[str, str]:
    """Build and test commands for an applied-kernels task, run through the release's own runner.

    The build step checks that the candidate and def.py are there, then pre-builds: it runs the runner as
    the test does, with no GPU visible, up to the end of its builds of the candidate and
    testbench/reference.cu (APPLIED_PREBUILD), so that the test run finds both built and only loads them
    (APPLIED_KEPT_BUILDS keeps the builds across the runs of one work dir) instead of compiling for a minute
    while it holds a GPU slot. The pre-build is best effort and silent, as kernelbench's: its output is
    dropped and its failure ignored, so a candidate that does not compile fails in the test run as released.
    The test exits 0 when the candidate matches the reference (atol = rtol = 5e-2, as the release runs
    every applied task), 2 when it does not build, 3 when it is wrong; it prints ``Kernel time`` and
    ``Speedup`` lines.
    """
    setup = (
        "import os, sys\n"
        "from harness.applied_kernels_runner.runner import run_task\n"
        "from harness.applied_kernels_runner.task_schema import (TaskConfig, RunnerConfig, "
        "CorrectnessConfig, PerformanceConfig, HardwareConfig)\n"
        f"cfg = TaskConfig(task_id={json.dumps(task_id)}, name={json.dumps(task_id)}, task_class=2, domain=\"ml\", "
        "hardware=HardwareConfig(min_sm=80), "
        "runner=RunnerConfig(backend=\"class2_defpy\", workdir=os.getcwd(), solution_file=\"solution.cu\", "
        f"timeout_sec={int(timeout_s)}), "
        "correctness=CorrectnessConfig(mode=\"tensor_compare\", tolerances={\"atol\": 5e-2, \"rtol\": 5e-2}), "
        "performance=PerformanceConfig(enabled=True))\n"
        # The runner builds the reference into <release root>/.cache, and the release is read-only here:
        # it sees a root of links to the release's entries beside a .cache of its own in the work dir.
        "import harness.applied_kernels_runner.eval as _ev\n"
        "_root = _ev.get_project_root()\n"
        "_shadow = os.path.abspath(\".release_root\")\n"
        "os.makedirs(os.path.join(_shadow, \".cache\"), exist_ok=True)\n"
        "for _n in os.listdir(_root):\n"
        "    if _n != \".cache\" and not os.path.lexists(os.path.join(_shadow, _n)):\n"
        "        os.symlink(os.path.join(_root, _n), os.path.join(_shadow, _n))\n"
        "_ev.get_project_root = lambda: _shadow\n"
        + APPLIED_KEPT_BUILDS
    )
    script = setup + (
        "r = run_task(cfg, os.path.abspath(\"solution.cu\"), measure_perf=True, verbose=False)\n"
        "if not r.compiled:\n"
        "    print(\"BUILD_FAIL:\", r.error_msg or \"compile failed\"); sys.exit(2)\n"
        "if not r.correct:\n"
        "    print(\"LOGIC_FAIL:\", r.error_msg or \"tensor mismatch\"); sys.exit(3)\n"
        "print(\"Kernel time: %.4f ms\" % (r.latency_mean_ms or 0.0))\n"
        "print(\"Speedup: %.4fx\" % (r.speedup or 0.0))\n"
    )
    prebuild = (
        f"import signal\nsignal.alarm({PREBUILD_S})\n"
        + setup
        + APPLIED_PREBUILD
        + "try:\n"
        "    run_task(cfg, os.path.abspath(\"solution.cu\"), measure_perf=True, verbose=False)\n"
        "except _Prebuilt:\n"
        "    pass\n"
    )
    build = (
        "test -f solution.cu && test -f def.py && "
        "echo 'applied task: the runner builds and checks both kernels at test time' && "
        f"( CUDA_VISIBLE_DEVICES= python -c {shlex.quote(prebuild)} >/dev/null 2>&1 || true )"
    )
    del release_root  # the root goes on PYTHONPATH (Task.pythonpath), not into the command
    return build, f"python -c {shlex.quote(script)}"


# ------------------------------------------------------------------ Python dependencies


#: Import name -> the package that provides it, where the two differ.
PACKAGE_OF = {
    "dotenv": "python-dotenv",
    "yaml": "pyyaml",
    "cv2": "opencv-python",
    "PIL": "pillow",
    "sklearn": "scikit-learn",
}

_PY_FILE = re.compile(r"(?:^|\s)((?:[\w.-]+/)*[\w.-]+\.py)\b")

#: Modules the machine probe reports itself (gpu.Machine.torch), so not reported twice.
_PROBED = frozenset({"torch"})


def _unconditional_imports(path: Path) -> tuple[set[str], set[str]]:
    """(absolute module names, relative module names) imported at a module's top level, outside try/if."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set(), set()
    absolute: set[str] = set()
    relative: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            absolute.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = node.module or ""
                relative.update(f"{base}.{a.name}".strip(".") if not base else base for a in node.names)
            elif node.module:
                absolute.add(node.module)
    return absolute, relative


def _resolve(module: str, roots: tuple[Path, ...]) -> Path | None:
    rel = Path(*module.split("."))
    for root in roots:
        for cand in (root / rel / "__init__.py", root.joinpath(*rel.parts[:-1], rel.name + ".py")):
            if cand.is_file():
                return cand
    return None


@lru_cache(maxsize=512)
def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def python_files(task: Task) -> tuple[list[Path], set[str]]:
    """The Python files a task's commands run and the modules its ``python -c`` snippets import."""
    commands = f"{task.build_command}\n{task.test_command}"
    files = []
    for m in _PY_FILE.finditer(commands):
        p = task.testbench / m.group(1)
        if p.is_file():
            files.append(p)
    modules: set[str] = set()
    for command in (task.build_command, task.test_command):
        try:
            argv = shlex.split(command)
        except ValueError:
            continue
        for i, arg in enumerate(argv[:-1]):
            if arg == "-c" and "python" in Path(argv[i - 1] if i else "").name:
                modules |= _snippet_imports(argv[i + 1])
    return files, modules


def _snippet_imports(code: str) -> set[str]:
    """Absolute modules a ``python -c`` snippet imports at its top level."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


def missing_python_modules(task: Task) -> list[str]:
    """Third-party modules the task's Python harness imports unconditionally that this interpreter lacks.

    Followed: the scripts its commands run, the modules its ``python -c`` snippets import, and, inside the
    folders on the task's PYTHONPATH (the release's vendored packages), every module those import at top
    level. Modules imported inside try/if blocks or functions are optional and not reported."""
    roots = task.pythonpath
    files, modules = python_files(task)
    seen_files: set[Path] = set()
    external: set[str] = set()
    todo: list[tuple[Path | None, str]] = [(None, m) for m in modules] + [(f, "") for f in files]
    while todo:
        path, module = todo.pop()
        if path is None:
            parts = module.split(".")
            local = [_resolve(".".join(parts[:i]), roots) for i in range(1, len(parts) + 1)]
            found = [p for p in local if p is not None]
            if not found:
                external.add(parts[0])
                continue
            for p in found:
                todo.append((p, ".".join(parts)))
            continue
        if path in seen_files:
            continue
        seen_files.add(path)
        absolute, relative = _unconditional_imports(path)
        for name in absolute:
            todo.append((None, name))
        pkg_dir = path.parent
        for name in relative:
            for cand in (pkg_dir / f"{name.split('.')[0]}.py", pkg_dir / name.split(".")[0] / "__init__.py"):
                if cand.is_file():
                    todo.append((cand, name))
        if path.name != "__init__.py" and (pkg_dir / "__init__.py").is_file():
            todo.append((pkg_dir / "__init__.py", ""))
    stdlib = set(sys.stdlib_module_names)
    return sorted(m for m in external if m not in stdlib and m not in _PROBED and not _importable(m))


def describe_missing(modules: list[str]) -> str:
    """``Python module 'dotenv' (pip install python-dotenv)`` for one or more modules."""
    parts = [f"'{m}'" + (f" (pip install {PACKAGE_OF[m]})" if m in PACKAGE_OF else "") for m in modules]
    noun = "module" if len(modules) == 1 else "modules"
    return f"Python {noun} {', '.join(parts)} not importable by {sys.executable}"


def dependency_lines(tasks: list[Task]) -> list[str]:
    """One line per family whose Python harness imports a module this interpreter lacks."""
    by: dict[tuple[str, tuple[str, ...]], int] = {}
    for t in tasks:
        missing = tuple(missing_python_modules(t))
        if missing:
            by[(t.family, missing)] = by.get((t.family, missing), 0) + 1
    return [
        f"{family} ({n} task{'s' if n != 1 else ''}): {describe_missing(list(mods))}; they are not runnable"
        for (family, mods), n in sorted(by.items())
    ]
