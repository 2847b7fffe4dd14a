"""The applied-kernels families (flashattention, layernorm, cufft_samples): def.py and testbench/reference.cu,
built, checked and timed by the release's own applied-kernels runner (docs/release-families.md, applied
families)."""

from __future__ import annotations

import ast
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import beavertui.engine.corpus.families.base as base
from beavertui.engine.corpus.families.base import Family, RunnerCommands
from beavertui.engine.corpus.task import Task

if TYPE_CHECKING:
    from beavertui.engine.corpus.meta import InputMeta

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
        f'cfg = TaskConfig(task_id={json.dumps(task_id)}, name={json.dumps(task_id)}, task_class=2, domain="ml", '
        "hardware=HardwareConfig(min_sm=80), "
        'runner=RunnerConfig(backend="class2_defpy", workdir=os.getcwd(), solution_file="solution.cu", '
        f"timeout_sec={int(timeout_s)}), "
        'correctness=CorrectnessConfig(mode="tensor_compare", tolerances={"atol": 5e-2, "rtol": 5e-2}), '
        "performance=PerformanceConfig(enabled=True))\n"
        # The runner builds the reference into <release root>/.cache, and the release is read-only here:
        # it sees a root of links to the release's entries beside a .cache of its own in the work dir.
        "import harness.applied_kernels_runner.eval as _ev\n"
        "_root = _ev.get_project_root()\n"
        '_shadow = os.path.abspath(".release_root")\n'
        'os.makedirs(os.path.join(_shadow, ".cache"), exist_ok=True)\n'
        "for _n in os.listdir(_root):\n"
        '    if _n != ".cache" and not os.path.lexists(os.path.join(_shadow, _n)):\n'
        "        os.symlink(os.path.join(_root, _n), os.path.join(_shadow, _n))\n"
        "_ev.get_project_root = lambda: _shadow\n" + APPLIED_KEPT_BUILDS
    )
    script = setup + (
        'r = run_task(cfg, os.path.abspath("solution.cu"), measure_perf=True, verbose=False)\n'
        "if not r.compiled:\n"
        '    print("BUILD_FAIL:", r.error_msg or "compile failed"); sys.exit(2)\n'
        "if not r.correct:\n"
        '    print("LOGIC_FAIL:", r.error_msg or "tensor mismatch"); sys.exit(3)\n'
        'print("Kernel time: %.4f ms" % (r.latency_mean_ms or 0.0))\n'
        'print("Speedup: %.4fx" % (r.speedup or 0.0))\n'
    )
    prebuild = (
        f"import signal\nsignal.alarm({base.PREBUILD_S})\n" + setup + APPLIED_PREBUILD + "try:\n"
        '    run_task(cfg, os.path.abspath("solution.cu"), measure_perf=True, verbose=False)\n'
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


@dataclass(frozen=True)
class Applied(Family):
    """The release's applied-kernels runner builds testbench/reference.cu beside the candidate, checks the two
    against each other and prints the candidate's ``Kernel time`` and ``Speedup``."""

    def runner_commands(
        self, task_dir: Path, root: Path, inp: InputMeta, pythonpath: tuple[Path, ...]
    ) -> RunnerCommands | None:
        """Runnable through the release's own runner when its reference sources are all shipped, else not
        runnable naming what is missing."""
        missing = applied_missing_sources(task_dir, root)
        if missing:
            why = (
                f"the reference needs {', '.join(missing)}, which the release does not ship "
                "(its reference_sources/ has only cutlass and ThunderKittens)"
            )
            return False, why, inp.build_command, inp.test_command, pythonpath
        release = root.parent
        if not (release / "harness" / "applied_kernels_runner").is_dir():
            why = "applied task: the release's harness/applied_kernels_runner is not beside its data/"
            return False, why, inp.build_command, inp.test_command, pythonpath
        build, test = applied_commands(task_dir.name, release)
        return True, None, build, test, (*pythonpath, release)

    def build_is_path_bound(self, task: Task) -> bool:
        """The runner's pre-build compiles with torch's extension builder, which records absolute paths (its
        build.ninja, the work dir's include folders): a build restored into another work dir is compiled
        again by the test run, while it holds a GPU slot."""
        return True


def applied_family(name: str) -> Applied:
    """The applied family called ``name`` (also one the release may add, of the applied-kernels level)."""
    return Applied(
        name, "applied_runner", "testbench_lines",
        "testbench/reference.cu compiled by the release's applied-kernels runner beside the candidate",
        names=frozenset({name}), level=True,
    )  # fmt: skip


#: The applied families of the release.
FLASHATTENTION = applied_family("flashattention")
LAYERNORM = applied_family("layernorm")
CUFFT_SAMPLES = applied_family("cufft_samples")
