"""The applied family's test command keeps the runner's builds across the runs of one work dir.

As released, the applied-kernels runner builds the candidate into a new temporary folder on every run and
writes its generated binding source again each time, so torch's ninja rebuilds both extensions on every run
(a 3-run timing stage took 149 s on the H200). families.APPLIED_KEPT_BUILDS redirects the candidate's build
to the work dir and gives an unchanged rewritten source its first modification time back.

No GPU, no torch here: the runner's compile step and torch's loader are stand-ins with the two behaviours
that matter (a binding source written again on every call, before the build folder is made; a loader that
rebuilds whatever has a source newer than its output, as ninja does). The script around the lines is the
same shape as the real test command's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from beavertui.engine.corpus.families import APPLIED_KEPT_BUILDS

LOADER = """
import os
def load(name, sources, build_directory, **kw):
    out = os.path.join(build_directory, name + ".so")
    newest = max(os.stat(s).st_mtime_ns for s in sources)
    if not os.path.exists(out) or os.stat(out).st_mtime_ns <= newest:
        with open(os.path.join(os.environ["COMPILES"]), "a") as f:
            f.write(name + "\\n")
        with open(out, "w") as f:
            f.write("built\\n")
    return type("M", (), {"f": staticmethod(lambda: None)})
"""

COMPILER = """
import hashlib, os
from torch.utils.cpp_extension import load
def compile_cuda_module(cuda_source, function_signature, build_dir=None, **kw):
    h = hashlib.md5(open(cuda_source, "rb").read()).hexdigest()[:8]
    wrapper = os.path.join(build_dir, "wrapper_f_" + h + ".cpp")
    with open(wrapper, "w") as f:  # written on every call, before the folder is made (as released)
        f.write("// binding of f\\n")
    os.makedirs(build_dir, exist_ok=True)
    return load(name="mod_" + os.path.basename(cuda_source).split(".")[0] + "_" + h,
                sources=[wrapper, cuda_source], build_directory=build_dir).f
"""

EVAL = """
import os, tempfile
from .compiler import compile_cuda_module
def eval_kernel(solution):
    build_dir = tempfile.mkdtemp(prefix="applied_kernels_sol_")
    compile_cuda_module(cuda_source=solution, function_signature="void f()", build_dir=build_dir)
    ref_dir = os.path.join(os.getcwd(), ".release_root", ".cache", "ref_builds", "t")
    os.makedirs(ref_dir, exist_ok=True)
    compile_cuda_module(cuda_source=os.path.abspath("reference.cu"), function_signature="void f()", build_dir=ref_dir)
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    for rel, text in {
        "torch/__init__.py": "",
        "torch/utils/__init__.py": "",
        "torch/utils/cpp_extension.py": LOADER,
        "harness/__init__.py": "",
        "harness/applied_kernels_runner/__init__.py": "",
        "harness/applied_kernels_runner/compiler.py": COMPILER,
        "harness/applied_kernels_runner/eval.py": EVAL,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def runs(site: Path, work: Path, kept: bool, n: int) -> list[list[str]]:
    """The names each of ``n`` runs in ``work`` compiled."""
    script = "import os\nimport harness.applied_kernels_runner.eval as _ev\n"
    script += (APPLIED_KEPT_BUILDS if kept else "") + "_ev.eval_kernel(os.path.abspath('solution.cu'))\n"
    log = work / "compiles.txt"
    env = {**os.environ, "PYTHONPATH": str(site), "COMPILES": str(log), "TMPDIR": str(work.parent)}
    out = []
    for _ in range(n):
        log.write_text("")
        p = subprocess.run([sys.executable, "-c", script], cwd=work, env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        out.append(sorted(name.split("_")[1] for name in log.read_text().split()))
    return out


def work_dir(tmp_path: Path, name: str) -> Path:
    w = tmp_path / name
    w.mkdir()
    (w / "solution.cu").write_text("__global__ void k() {}\n")
    (w / "reference.cu").write_text("__global__ void r() {}\n")
    return w


def test_as_released_every_run_builds_both_extensions_again(site: Path, tmp_path: Path) -> None:
    assert runs(site, work_dir(tmp_path, "w"), kept=False, n=3) == [["reference", "solution"]] * 3


def test_kept_builds_compile_once_per_work_dir(site: Path, tmp_path: Path) -> None:
    w = work_dir(tmp_path, "w")
    assert runs(site, w, kept=True, n=3) == [["reference", "solution"], [], []]
    assert (w / ".applied_builds" / "solution").is_dir()
    # a changed candidate is built again; the reference is not
    (w / "solution.cu").write_text("__global__ void k() { int x = 1; (void)x; }\n")
    assert runs(site, w, kept=True, n=2) == [["solution"], []]
    # another work dir (another attempt) builds its own
    assert runs(site, work_dir(tmp_path, "w2"), kept=True, n=1) == [["reference", "solution"]]


# ------------------------------------------------------------------ the build stage's pre-build

#: The runner as the release's command line uses it, reduced to what the pre-build touches: run_task ->
#: eval_kernel, which asks for the current device, loads the task definition, builds the candidate into a
#: new temporary folder and the reference into <root>/.cache/ref_builds/<task>, then makes its first inputs
#: (where its trials begin; any failure from there on is a result, not an exception).
RUNNER_SITE = {
    "harness/applied_kernels_runner/compiler.py": COMPILER.replace(
        "    h = hashlib",
        '    if b"#error" in open(cuda_source, "rb").read():\n'
        '        raise RuntimeError("nvcc: #error in " + cuda_source)\n'
        "    h = hashlib",
    ),
    "torch/__init__.py": """
import os
class cuda:
    @staticmethod
    def current_device():
        if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
            raise RuntimeError("No CUDA GPUs are available")
        return 0
""",
    "harness/applied_kernels_runner/task_schema.py": """
class _Kw:
    def __init__(self, **kw):
        self.__dict__.update(kw)
TaskConfig = RunnerConfig = CorrectnessConfig = PerformanceConfig = HardwareConfig = _Kw
""",
    "harness/applied_kernels_runner/eval.py": """
import os, tempfile
from .compiler import compile_cuda_module
def get_project_root():
    return os.environ["RELEASE_ROOT"]
def load_task_def(task_dir):
    return {"get_inputs": lambda: [1.0]}
def eval_kernel(task_dir, solution_cu):
    import torch
    torch.cuda.current_device()
    task_def = load_task_def(task_dir)
    build_dir = tempfile.mkdtemp(prefix="applied_kernels_sol_")
    compile_cuda_module(cuda_source=solution_cu, function_signature="void f()", build_dir=build_dir)
    ref_dir = os.path.join(get_project_root(), ".cache", "ref_builds", os.path.basename(task_dir))
    os.makedirs(ref_dir, exist_ok=True)
    ref = os.path.join(task_dir, "reference.cu")
    compile_cuda_module(cuda_source=ref, function_signature="void f()", build_dir=ref_dir)
    try:
        task_def["get_inputs"]()
    except Exception:
        return False
    with open(os.path.join(task_dir, "trials_ran"), "a") as f:
        f.write("trial\\n")
    return True
""",
    "harness/applied_kernels_runner/runner.py": """
import os
from .eval import eval_kernel
class _Result:
    compiled = correct = True
    error_msg = ""
    latency_mean_ms = speedup = 1.0
def run_task(cfg, solution_path, measure_perf=True, verbose=True):
    r = _Result()
    try:
        r.correct = eval_kernel(os.getcwd(), solution_path)
    except Exception as exc:
        r.compiled, r.error_msg = False, str(exc)
    return r
""",
}


@pytest.fixture
def runner_site(site: Path, tmp_path: Path) -> dict[str, str]:
    for rel, text in RUNNER_SITE.items():
        (site / rel).write_text(text)
    root = tmp_path / "release"
    (root / "harness").mkdir(parents=True)
    return {
        **os.environ, "PYTHONPATH": str(site), "RELEASE_ROOT": str(root),
        "COMPILES": str(tmp_path / "compiles.txt"), "TMPDIR": str(tmp_path),
    }  # fmt: skip


def _stage(command: str, work: Path, env: dict[str, str]) -> tuple[list[str], str]:
    """Run one of the task's commands in ``work``: the names it compiled, and its output."""
    from beavertui.engine.host.adapt import adapt_command

    log = Path(env["COMPILES"])
    log.write_text("")
    p = subprocess.run(
        ["bash", "-c", adapt_command(command, None)], cwd=work, env=env, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return sorted(name.split("_")[1] for name in log.read_text().split()), p.stdout


@pytest.mark.parametrize("pre", [True, False])
def test_the_build_stage_builds_both_kernels_and_the_test_run_only_loads_them(
    runner_site: dict[str, str], tmp_path: Path, pre: bool
) -> None:
    """The applied build command runs the runner with no GPU visible up to the end of its builds (no trial
    runs there); the test run then compiles nothing and runs its trials. Without the pre-build (the build
    command as before), the test run compiles both."""
    from beavertui.engine.corpus.families import applied_commands

    build, test = applied_commands("t", tmp_path)
    if not pre:
        build = build.split(" && ( ", 1)[0]
    w = work_dir(tmp_path, "w")
    (w / "def.py").write_text("")
    built, out = _stage(build, w, runner_site)
    assert "applied task" in out and not (w / "trials_ran").exists()
    assert built == (["reference", "solution"] if pre else [])
    ran, out = _stage(test, w, runner_site)
    assert ran == ([] if pre else ["reference", "solution"])
    assert (w / "trials_ran").read_text() == "trial\n" and "Kernel time: 1.0000 ms" in out


def test_a_candidate_that_does_not_build_fails_in_the_test_run_as_released(
    runner_site: dict[str, str], tmp_path: Path
) -> None:
    """The pre-build is silent: a build error there leaves the build stage passing, and the test run
    reports it (BUILD_FAIL, exit 2) as the release's runner does."""
    from beavertui.engine.corpus.families import applied_commands
    from beavertui.engine.host.adapt import adapt_command

    build, test = applied_commands("t", tmp_path)
    w = work_dir(tmp_path, "w")
    (w / "def.py").write_text("")
    (w / "solution.cu").write_text("#error this candidate does not compile\n")
    built, out = _stage(build, w, runner_site)
    assert built == [] and out.strip().endswith("at test time")
    p = subprocess.run(
        ["bash", "-c", adapt_command(test, None)], cwd=w, env=runner_site, capture_output=True, text=True
    )
    assert p.returncode == 2 and p.stdout.startswith("BUILD_FAIL:")
