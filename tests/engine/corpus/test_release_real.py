"""Real CUDABeaver release instances (tests/data/release_real, CC BY 4.0, see its NOTICE): layouts, commands,
which side is the reference per family, the families' own oracles and speed lines, validation verdicts and
their per-GPU store, missing Python modules named up front, unfinished sessions left out of the metrics."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import gpu_present

from beavertui.cli import main
from beavertui.engine.corpus import families, verdicts
from beavertui.engine.corpus.load import load_corpus, load_task, runnable_here
from beavertui.engine.corpus.task import Task
from beavertui.engine.host.adapt import adapt_command
from beavertui.engine.host.gpu import Machine
from beavertui.engine.judge.classify import Classification
from beavertui.engine.session.events import GpuSignature, InfraError, StageResult, Verdict
from beavertui.engine.stage import stages
from beavertui.engine.timing.speedup import SpeedupUnavailable
from beavertui.engine.toolchain.base import AttemptOptions
from beavertui.engine.toolchain.local import LocalToolchain
from beavertui.engine.toolchain.verdict import family_oracle
from beavertui.engine.validation.validate import TaskValidation, record_of

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "data" / "release_real"
DATA = REAL / "data"
H200 = GpuSignature(
    slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0", driver="", cuda="13.0"
)

IDS = {
    "cuda59": "cuda_59__logic_error__501f0dd2",
    "cuda104": "cuda_104__compile_error__f8160fc8",
    "ce1": "cuda_1__memory_crash__4c324055",
    "cublas": "cublas_level1_10__compile_error__d6b7227b",
    "cufft": "cufft_1__compile_error__611168ad",
    "cusparse": "cusparse_4__compile_error__cfcd99f6",
    "cudabench": "cudabench_72__memory_crash__32cc9e41",
    "kb1": "kernelbench_level1_92__compile_error__52277656",
    "kb2": "kernelbench_level2_63__logic_error__6e3c1c0a",
    "cutlass": "cutlass_05_batched_gemm__perf_broken__3742c34f",
    "applied": "cufft_samples_c2c_1d_1024_fp32__perf_broken__8a23fb7d",
    "flash": "flashattention_fwd_hdim64_bf16__perf_broken__4f66c25d",
}


@pytest.fixture(scope="module")
def real() -> dict[str, Task]:
    load = load_corpus(REAL)
    assert load.problems == ()
    by = {t.id: t for t in load.tasks}
    return {k: by[v] for k, v in IDS.items()}


def test_every_real_instance_loads_with_its_family_semantics(real: dict[str, Task]) -> None:
    kinds = {k: families.family_of(t).reference for k, t in real.items()}
    assert kinds == {
        "cuda59": "drop_in", "cuda104": "drop_in", "ce1": "drop_in", "cublas": "drop_in", "cufft": "drop_in",
        "cusparse": "drop_in", "cudabench": "none", "kb1": "eager_model", "kb2": "eager_model",
        "cutlass": "in_binary", "applied": "applied_runner", "flash": "applied_runner",
    }  # fmt: skip
    assert real["kb1"].solution_file == "solution.py" and real["kb1"].broken_start_path.suffix == ".cu"
    assert (
        real["cutlass"].solution_file == "solution.h"
        and real["cutlass"].broken_start_path.name == "broken_start.h"
    )
    # the release runs its stages under 300 s; kernelbench's JIT builds happen in the test stage
    assert real["kb2"].timeouts.run_s == 300.0 and real["cuda104"].timeouts.build_s == 300.0
    # the id's hash8 need not match broken_start_hash (cuda_59 says "manual_v1")
    assert real["cuda59"].broken_start_hash == "manual_v1"


def test_which_side_is_the_reference(real: dict[str, Task]) -> None:
    for key in ("cuda59", "cuda104", "ce1", "cublas", "cufft", "cusparse"):
        assert families.reference_submission(real[key]) == real[key].reference()
    kb = real["kb2"]
    problem = (kb.testbench / "problem.py").read_text()
    sub = families.reference_submission(kb)
    assert sub is not None and sub.startswith(kb.reference() or "") and families.KERNELBENCH_ALIAS in sub
    assert (kb.reference() or "").strip() == problem.strip()  # reference.py is the problem's eager Model
    # the static checker (the build command) applies to candidates, never to the reference
    assert "validate_kernel_static" in kb.build_command
    as_ref = families.for_code(kb, sub)
    assert "validate_kernel_static" not in as_ref.build_command and as_ref.test_command == kb.test_command
    # any other code goes through the checker (then the silent pre-build of tests/engine/toolchain/test_kernelbench_prebuild.py)
    assert families.for_code(kb, kb.broken_start()).build_command.startswith(kb.build_command + " && ")
    assert families.for_code(kb, sub + "\n# edited\n").build_command.startswith(kb.build_command + " && ")
    # cutlass's reference is the CUTLASS kernel inside the testbench; cudabench has none
    assert families.reference_submission(real["cutlass"]) is None
    assert "CUTLASS kernel" in families.why_no_reference_submission(real["cutlass"])
    assert families.reference_submission(real["cudabench"]) is None
    assert (real["cudabench"].reference() or "").count("\n") <= 1  # one comment line


def test_kernelbench_reference_submission_builds_with_its_own_build_step(
    real: dict[str, Task], tmp_path: Path
) -> None:
    kb = real["kb1"]
    sub = families.reference_submission(kb)
    assert sub is not None
    cfg = stages.StageConfig(base_dir=tmp_path)
    with stages.workdir(families.for_code(kb, sub), sub, cfg) as work:
        res = stages.build(work, cfg)
        assert res.rc == 0, res.log
        assert "static checker skipped" in res.log
    broken = "def broken(:\n"
    with stages.workdir(families.for_code(kb, broken), broken, cfg) as work:
        assert stages.build(work, cfg).rc != 0  # not the submission: the release's checker runs


@pytest.mark.skipif(
    not os.environ.get("BEAVERTUI_RELEASE"), reason="set BEAVERTUI_RELEASE to a release checkout"
)
def test_release_static_checker_rejects_the_eager_reference(real: dict[str, Task]) -> None:
    import importlib.util

    path = Path(os.environ["BEAVERTUI_RELEASE"]) / "harness/_vendor/kernelbench/kernel_static_checker.py"
    spec = importlib.util.spec_from_file_location("kb_static_checker", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ok, errors, _ = mod.validate_kernel_static(real["kb2"].reference(), backend="cuda", precision="fp32")
    assert not ok and any("__global__" in e for e in errors)


def test_commands_adapt_to_the_local_gpu(real: dict[str, Task]) -> None:
    kb = adapt_command(real["kb2"].test_command, 90, python="/opt/py/bin/python")
    assert kb.startswith("/opt/py/bin/python -c") and "set_gpu_arch(['Hopper'])" in kb
    cb = adapt_command(real["cudabench"].test_command, 90, python="/opt/py/bin/python")
    assert (
        "/opt/py/bin/python test/generate_data.py" in cb and "/opt/py/bin/python test/compare_output.py" in cb
    )
    assert adapt_command(real["cutlass"].build_command, 90) == real["cutlass"].build_command
    assert adapt_command(real["cuda104"].build_command, 90) == real["cuda104"].build_command


def _compare(tmp: Path, task: Task, out: bytes | None) -> subprocess.CompletedProcess[str]:
    import numpy as np

    work = tmp / "w"
    shutil.copytree(task.testbench, work)
    (work / "data").mkdir()
    ref = np.random.default_rng(0).standard_normal(16 * 512 * 128).astype(np.float32)
    ref.tofile(work / "data" / "batchC_ref.bin")
    if out is not None:
        (work / "data" / "batchC_out.bin").write_bytes(out)
    return subprocess.run(
        [sys.executable, "test/compare_output.py"], cwd=work, capture_output=True, text=True, timeout=60
    )


def test_cudabench_correctness_is_its_printed_T_or_F_not_its_exit_code(
    real: dict[str, Task], tmp_path: Path
) -> None:
    import numpy as np

    cb = real["cudabench"]
    ref = np.random.default_rng(0).standard_normal(16 * 512 * 128).astype(np.float32)
    runs = {
        "same": _compare(tmp_path / "a", cb, ref.tobytes()),
        "wrong": _compare(tmp_path / "b", cb, (ref + 1.0).tobytes()),
        "missing": _compare(tmp_path / "c", cb, None),
    }
    assert {k: r.returncode for k, r in runs.items()} == {"same": 0, "wrong": 0, "missing": 0}
    assert {k: families.cudabench_verdict(r.stdout) for k, r in runs.items()} == {
        "same": True, "wrong": False, "missing": False,
    }  # fmt: skip
    passed = Classification("passed", "", (), "none")
    for key, want in (("same", "passed"), ("wrong", "functional_correctness")):
        log = "generate ok\n" + runs[key].stdout
        run = StageResult(stage="run", command="t", rc=0, duration_s=0.1, log=log)
        assert family_oracle(cb, passed, run).category == want
    silent = StageResult(stage="run", command="t", rc=0, duration_s=0.1, log="no verdict printed\n")
    assert "neither T nor F" in family_oracle(cb, passed, silent).signature
    # other families keep their exit status as the oracle
    other = StageResult(stage="run", command="t", rc=0, duration_s=0.1, log="F\n")
    assert family_oracle(real["cuda104"], passed, other).category == "passed"


def _rendered_cutlass_log(cu: str) -> str:
    """The testbench's own printf formats, filled in as a run fills them (two sizes)."""
    fmts = dict(re.findall(r'fprintf\(stdout,\s*"((Ref time|Kernel time|Speedup)[^"]*)"', cu))
    by = {kind: f for f, kind in fmts.items()}
    assert set(by) == {"Ref time", "Kernel time", "Speedup"}, fmts
    out = []
    for ref, ker in ((0.5, 2.0), (4.0, 8.0)):
        out.append(by["Ref time"].replace("\\n", "\n") % (ref * 1.1, 20, ref))
        out.append(by["Kernel time"].replace("\\n", "\n") % (ker * 1.1, 20, ker))
        out.append(by["Speedup"].replace("\\n", "\n") % (ref / ker))
    return "Passed\n" + "".join(out)


def test_cutlass_speed_lines_parsed_from_its_testbench(real: dict[str, Task]) -> None:
    cut = real["cutlass"]
    recorded = REAL / "recorded" / f"{cut.id}.test.log"
    log = (
        recorded.read_text()
        if recorded.is_file()
        else _rendered_cutlass_log((cut.testbench / "batched_gemm.cu").read_text())
    )
    lines = families.parse_speed_lines(log)
    assert len(lines.speedups) == len(lines.reference_ms) == len(lines.candidate_ms) >= 2
    if not recorded.is_file():
        assert lines.reference_ms == (0.5, 4.0) and lines.candidate_ms == (2.0, 8.0)  # the mins, not the avgs
        assert lines.speedup == pytest.approx((0.25 * 0.5) ** 0.5, rel=1e-3)
        assert lines.reference == pytest.approx((0.5 * 4.0) ** 0.5)
    assert "make test" in cut.build_command and cut.test_command == "./test"


def test_applied_speed_lines_give_both_times() -> None:
    from beavertui.engine.validation.validate import _lines_note

    lines = families.parse_speed_lines("Kernel time: 2.0000 ms\nSpeedup: 0.2500x\n")
    assert lines.candidate == pytest.approx(2.0) and lines.reference == pytest.approx(0.5)
    assert lines.speedup == pytest.approx(0.25)
    # the validation note says the reference time is derived (it read "Ref time lines (0 sizes)")
    assert _lines_note(lines) == (
        "reference time = the testbench's Kernel time x Speedup lines (1 size(s); it prints no reference time)"
    )


def test_applied_families_run_through_the_runner_or_say_what_is_missing(
    real: dict[str, Task], tmp_path: Path
) -> None:
    fa = real["flash"]
    assert not fa.runnable and "reference_sources/flash_attn" in (fa.not_runnable_reason or "")
    ap = real["applied"]
    assert not ap.runnable and "applied_kernels_runner" in (ap.not_runnable_reason or "")
    # beside a release harness, cufft_samples runs: def.py needs no reference source the release lacks
    rel = tmp_path / "rel"
    shutil.copytree(DATA / ap.id, rel / "data" / ap.id)
    (rel / "harness" / "applied_kernels_runner").mkdir(parents=True)
    t = load_task(rel / "data" / ap.id, rel / "data")
    assert t.runnable and rel in t.pythonpath
    assert "from harness.applied_kernels_runner.runner import run_task" in t.test_command
    assert '"atol": 5e-2' in t.test_command and "python -c" in t.test_command
    _files, modules = families.python_files(t)
    assert "harness.applied_kernels_runner.runner" in modules


def _v(**kw: object) -> TaskValidation:
    base: dict[str, object] = {"task_id": "t", "label": "compile_error", "runnable": True}
    base.update(kw)
    return TaskValidation(**base)  # type: ignore[arg-type]


def test_verdict_kinds() -> None:
    assert _v(runnable=False, reason="no GPU").judge() == ("unusable", "no GPU")
    bad_ref = _v(
        reference_category="functional_correctness",
        reference_signature="mismatch",
        broken_category="buildability",
    )
    assert bad_ref.judge()[0] == "unusable" and "reference fails" in bad_ref.judge()[1]
    agrees = _v(reference_category="passed", broken_category="buildability", label_agrees=True)
    assert agrees.verdict == "usable" and agrees.valid
    relabel = _v(
        reference_category="passed",
        broken_category="functional_correctness",
        broken_signature="assert x",
        label_agrees=False,
    )
    assert relabel.verdict == "usable_relabelled" and relabel.valid and "assert x" in relabel.verdict_reason
    assert relabel.observed_category == "functional_correctness"
    passes = _v(reference_category="passed", broken_category="passed", label_agrees=False)
    assert passes.judge() == ("unusable", "the broken start passes unchanged")
    slow = _v(label="perf_broken", reference_category="passed", broken_category="passed", broken_speedup=0.2)
    assert slow.verdict == "usable"
    fast = _v(label="perf_broken", reference_category="passed", broken_category="passed", broken_speedup=0.95)
    assert fast.verdict == "unusable" and "0.95x" in fast.verdict_reason
    # no reference to check: cutlass (in the testbench) and cudabench (none) rest on the broken start alone
    cb = _v(
        label="memory_crash",
        reference_kind="none",
        broken_category="illegal_memory_access",
        label_agrees=True,
    )
    assert cb.verdict == "usable"
    cut = _v(label="perf_broken", reference_kind="in_binary", broken_category="buildability")
    assert cut.verdict == "usable_relabelled"


def test_verdicts_are_kept_per_gpu_and_select_the_tasks_of_a_run(
    real: dict[str, Task], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    a, b, c = real["cuda104"], real["cublas"], real["cufft"]
    bad = _v(task_id=a.id, reference_category="passed", broken_category="passed", gpu=H200.slug)
    ok = _v(
        task_id=b.id,
        reference_category="passed",
        broken_category="buildability",
        label_agrees=True,
        gpu=H200.slug,
    )
    verdicts.save(a, record_of(bad), cache)
    verdicts.save(b, record_of(ok), cache)
    sel = verdicts.select([a, b, c], H200.slug, cache)
    # c was never validated here: the package's known set of the H200 has it (validated 2026-12-01)
    assert sel.use == [b.id] and sel.unvalidated == []
    assert sel.skipped == {
        a.id: f"unusable on {H200.slug}: the broken start passes unchanged",
        c.id: f"unusable on {H200.slug} (the package's known verdicts): the broken start passes unchanged",
    }
    other = verdicts.select([a, b, c], "nvidia_a100_sm_80_cuda_12_4", cache)
    assert other.skipped == {} and other.unvalidated == [a.id, b.id, c.id]
    # a changed harness invalidates the stored verdict
    moved = tmp_path / "corpus"
    shutil.copytree(a.root, moved / a.id)
    t = load_task(moved / a.id, moved)
    assert verdicts.load(t, H200.slug, cache) is not None
    (t.testbench / "test" / "test_main.cu").chmod(0o644)
    with (t.testbench / "test" / "test_main.cu").open("a") as fh:
        fh.write("\n// changed\n")
    assert verdicts.load(t, H200.slug, cache) is None


def test_a_resume_withdraws_the_tasks_validated_unusable_after_the_run_began(
    real: dict[str, Task], tmp_path: Path
) -> None:
    """A task validated as unusable only after its run was created leaves the run's tasks for
    withdrawn_tasks (with the verdict's reason and time); one that was unusable before the run began was
    already dealt with at creation (skipped, or kept on purpose with --all-tasks) and stays; usable and
    unvalidated tasks stay."""
    import time

    from beavertui.batch.rundir import RunManifest
    from beavertui.service.batch_prepare import withdraw_unusable

    cache = tmp_path / "cache"
    a, b, c, d = real["cuda104"], real["cublas"], real["cufft"], real["cusparse"]
    created = time.time() - 3600
    late = record_of(_v(task_id=a.id, reference_category="passed", broken_category="passed", gpu=H200.slug))
    early = record_of(_v(task_id=d.id, reference_category="passed", broken_category="passed", gpu=H200.slug))
    early = early.model_copy(update={"measured_at": created - 60})
    ok = record_of(_v(task_id=b.id, reference_category="passed", broken_category="buildability",
                      label_agrees=True, gpu=H200.slug))  # fmt: skip
    for task, rec in ((a, late), (d, early), (b, ok)):
        verdicts.save(task, rec, cache)
    manifest = RunManifest(
        run_id="r", name="r", created=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(created)),
        corpus=str(a.root.parent), tasks=[a.id, b.id, c.id, d.id], protocols=[], models=[],
    )  # fmt: skip
    corpus = type("C", (), {"tasks": [a, b, c, d]})()
    said: list[str] = []
    got = withdraw_unusable(manifest, corpus, H200.slug, said.append, cache)
    assert list(got) == [a.id] and manifest.tasks == [b.id, c.id, d.id]
    assert manifest.withdrawn_tasks[a.id].startswith(f"validated unusable on {H200.slug} at ")
    assert manifest.withdrawn_tasks[a.id].endswith("after the run began: the broken start passes unchanged")
    assert said[0].startswith("beavertui: 1 task(s) withdrawn from the run") and a.id in said[1]
    # on another GPU nothing is known: nothing is withdrawn
    assert withdraw_unusable(manifest, corpus, "nvidia_a100_sm_80_cuda_12_4", said.append, cache) == {}


def test_a_missing_python_module_of_a_family_is_named_once(tmp_path: Path, real: dict[str, Task]) -> None:
    vendor = tmp_path / "_vendor" / "kernelbench"
    vendor.mkdir(parents=True)
    (vendor / "__init__.py").write_text("from . import utils\n")
    (vendor / "utils.py").write_text(
        "import os\nfrom dotenv_not_installed_anywhere import load_dotenv\n"
        "try:\n    import optional_not_installed\nexcept ImportError:\n    pass\n"
    )
    (vendor / "eval.py").write_text("import numpy\nfrom . import utils\n")
    (vendor / "kernel_static_checker.py").write_text("import re\n")
    from dataclasses import replace

    kb = replace(real["kb2"], pythonpath=(tmp_path / "_vendor",))
    assert families.missing_python_modules(kb) == ["dotenv_not_installed_anywhere"]
    machine = Machine(gpu=H200, nvcc="/usr/bin/nvcc", cuda="13.0", torch=True)
    why = runnable_here(kb, machine)
    assert why is not None and "'dotenv_not_installed_anywhere'" in why
    from beavertui.engine.corpus.families import dependency_lines

    lines = dependency_lines([kb, replace(kb, id="other")])
    assert len(lines) == 1 and lines[0].startswith("kernelbench (2 tasks)")
    assert "pip install python-dotenv" in families.describe_missing(["dotenv"])
    # a batch says it before it runs on this machine; one that replays recorded outcomes runs nothing here,
    # so the line (which said the tasks were not runnable, and then they ran) is not said
    from types import SimpleNamespace

    from beavertui.service.batch_prepare import BatchOptions, usable_tasks

    for toolchain, said_it in (("local", True), ("demo", False)):
        said: list[str] = []
        usable_tasks(
            BatchOptions(toolchain=toolchain), SimpleNamespace(tasks=[kb]), [kb.id], [], {}, said.append
        )
        assert any("'dotenv_not_installed_anywhere'" in line for line in said) == said_it, said


class _Tool(LocalToolchain):
    """The local toolchain on a pretend GPU whose reference cannot be timed."""

    def gpu(self) -> GpuSignature | None:
        return H200

    def stage_config(self) -> stages.StageConfig:
        return stages.StageConfig(base_dir=self.config.base_dir)

    def _measure(
        self, task: Task, work: stages.WorkDir, cfg: stages.StageConfig, options: AttemptOptions
    ) -> object:  # type: ignore[override]
        raise SpeedupUnavailable(f"{task.id}: the reference does not build here (fatal error: cutlass.h)")


def _task(tmp: Path, family: str, test: str) -> Task:
    tb = tmp / family / "testbench"
    tb.mkdir(parents=True)
    (tmp / family / "broken_start.cu").write_text("x\n")
    (tmp / family / "prompt.txt").write_text("p\n")
    return Task(
        id=f"{family}_1__x", family=family, label="compile_error", difficulty=None, root=tmp / family,
        corpus_root=tmp, layout="release", build_command="true", test_command=test, solution_file="solution.cu",
        broken_start_path=tmp / family / "broken_start.cu", reference_path=None, prompt_path=tmp / family / "prompt.txt",
        testbench=tb,
    )  # fmt: skip


def test_a_reference_problem_never_costs_a_correct_attempt(tmp_path: Path) -> None:
    from beavertui.engine.toolchain.local import LocalConfig

    tool = _Tool(LocalConfig(base_dir=tmp_path / "w"))
    events = list(
        tool.attempt(_task(tmp_path, "cuda", "true"), "int main(){}\n", AttemptOptions(iteration=2))
    )
    v = events[-1]
    assert isinstance(v, Verdict) and v.correct and v.category == "passed" and v.speedup is None
    assert not any(isinstance(e, InfraError) for e in events)
    assert v.speedup_note is not None and "does not build here" in v.speedup_note
    # cudabench: no reference at all, and the T/F line decides correctness
    good = list(tool.attempt(_task(tmp_path, "cudabench", "echo T"), "x\n", AttemptOptions(iteration=1)))[-1]
    assert isinstance(good, Verdict) and good.correct and good.speedup_note == families.NO_REFERENCE
    bad = list(
        tool.attempt(_task(tmp_path / "b", "cudabench", "echo F"), "x\n", AttemptOptions(iteration=1))
    )[-1]
    assert isinstance(bad, Verdict) and not bad.correct and bad.category == "functional_correctness"


RECORDED_CORPUS = ROOT / "tests" / "data" / "recorded"


def test_unfinished_sessions_are_left_out_of_every_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        [
            "batch", "--corpus", str(RECORDED_CORPUS), "--models", "scripted:vec_scale_demo.toml",
            "--toolchain", f"recorded:{RECORDED_CORPUS / 'vec_scale.recordings.jsonl'}",
            "--sessions-dir", str(tmp_path), "--protocol", "legacy", "--run-id", "r", "--quiet", "--samples", "2",
        ]
    )  # fmt: skip
    assert rc == 0
    run_dir = tmp_path / "r"
    first, second = sorted(run_dir.rglob("*.jsonl"))
    capsys.readouterr()
    assert main(["metrics", str(run_dir), "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["groups"][0]["pass@k"] == 1.0 and full["unfinished_sessions"] == 0
    # cut one session before its last verdict and its end record: a trajectory that has not ended
    lines = second.read_text().splitlines()
    kinds = [json.loads(x).get("kind") for x in lines]
    second.write_text("\n".join(lines[: max(i for i, k in enumerate(kinds) if k == "verdict")]) + "\n")
    assert main(["metrics", str(run_dir), "--json"]) == 0
    cut = json.loads(capsys.readouterr().out)
    g = cut["groups"][0]
    assert g["pass@k"] == 1.0 and g["n_tasks"] == 1  # the finished trajectory alone, not a 50% pass@k
    assert cut["unfinished_sessions"] == 1 and cut["resume"] == [f"beavertui batch --resume {run_dir}"]
    assert main(["metrics", str(run_dir), "--format", "markdown"]) == 0
    out = capsys.readouterr()
    note = f"1 unfinished session(s) left out of every rate (finish them: beavertui batch --resume {run_dir})"
    assert out.out.count(note) >= 2 and note in out.err  # every table says it
    assert main(["metrics", str(run_dir), "--format", "markdown", "--include-unfinished"]) == 0
    marked = capsys.readouterr().out
    assert marked.count("INCLUDES 1 UNFINISHED session(s)") >= 2
    # nothing finished at all: a one-line error naming the command that finishes the run
    first.write_text("\n".join(first.read_text().splitlines()[:2]) + "\n")
    second.write_text("\n".join(second.read_text().splitlines()[:2]) + "\n")
    assert main(["metrics", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "no finished session yet" in err and f"beavertui batch --resume {run_dir}" in err


def test_validation_table_script_counts_every_family(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # without a GPU nothing can be usable here, so validate says it did not get a usable corpus (exit 1)
    assert main(["corpus", "validate", "--corpus", str(REAL), "--json", "--no-timing"]) == (
        0 if gpu_present() else 1
    )
    out = capsys.readouterr().out
    rows = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    assert len(rows) == 12 and all(r["verdict"] in ("usable", "usable_relabelled", "unusable") for r in rows)
    by = {r["task_id"]: r for r in rows}
    assert "reference_sources/flash_attn" in by[IDS["flash"]]["verdict_reason"]
    results = tmp_path / "v.jsonl"
    results.write_text(out)
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join([*IDS.values(), "layernorm_x__perf_broken__00000000"]))
    doc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release_validation_doc.py"), str(results), "--all", str(ids)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "| kernelbench | 2 |" in doc and "| layernorm | 1 | 0 | 0 | 0 | 1 |" in doc
    assert "| **all** | 13 |" in doc and IDS["cutlass"] in doc


def test_validation_table_names_the_task_a_shared_reference_time_was_measured_for(tmp_path: Path) -> None:
    row = {
        "task_id": "kernelbench_level1_36__memory_crash__5ab71227", "label": "memory_crash", "family": "kernelbench",
        "verdict": "usable", "verdict_reason": "fails as labelled (illegal_memory_access)",
        "observed_category": "illegal_memory_access", "reference_ms": 11.42, "method": "torch_events_l2flush_interleaved",
        "reference_measured_for": "kernelbench_level1_36__logic_error__1edf54b6",
    }  # fmt: skip
    results = tmp_path / "v.jsonl"
    results.write_text(json.dumps(row) + "\n" + json.dumps({**row, "task_id": row["reference_measured_for"],
                                                            "reference_measured_for": None}) + "\n")  # fmt: skip
    doc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release_validation_doc.py"), str(results)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    lines = [x for x in doc.splitlines() if "11.4200 ms" in x]
    assert len(lines) == 2
    assert (
        sum(
            "measured for kernelbench_level1_36__logic_error__1edf54b6 (same reference and harness)" in x
            for x in lines
        )
        == 1
    )


@pytest.mark.gpu
def test_kernelbench_driver_times_the_eager_model_against_itself(
    real: dict[str, Task], tmp_path: Path
) -> None:
    kb = real["kb2"]
    sub = families.reference_submission(kb)
    assert sub is not None
    work = tmp_path / "w"
    shutil.copytree(kb.testbench, work)
    (work / "solution.py").write_text(sub)
    driver = ROOT / "beavertui" / "engine" / "timing" / "kernelbench_driver.py"
    res = subprocess.run(
        [sys.executable, str(driver), "--problem", "problem.py", "--solution", "solution.py", "--trials", "6"],
        cwd=work, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    line = next(x for x in res.stdout.splitlines() if x.startswith("BEAVER_KB_TIMING "))
    doc = json.loads(line.split(" ", 1)[1])
    assert "error" not in doc, doc
    assert len(doc["reference_ms"]) == len(doc["candidate_ms"]) == 6 and doc["interleaved"]
    assert doc["max_abs_diff"] == 0.0 and doc["flush_bytes"] >= 256 << 20


@pytest.mark.gpu
def test_kernelbench_driver_draws_the_inputs_before_its_go_on_real_torch(
    real: dict[str, Task], tmp_path: Path
) -> None:
    """Started ahead of the GPU hold with no GPU visible, the driver draws the task's inputs on the host before
    its go (or, above --ahead-max-bytes, sizes them on the meta device and draws them on the GPU after it),
    and the timing is the same; a get_inputs that makes its tensors on the GPU ends the driver before it
    says it is ready."""
    kb = real["kb2"]
    sub = families.reference_submission(kb)
    assert sub is not None
    driver = ROOT / "beavertui" / "engine" / "timing" / "kernelbench_driver.py"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    docs = {}
    for cap in ("4294967296", "1"):
        work = tmp_path / f"w{cap}"
        shutil.copytree(kb.testbench, work)
        (work / "solution.py").write_text(sub)
        (work / "go.json").write_text(json.dumps({"unset": ["CUDA_VISIBLE_DEVICES"]}))
        res = subprocess.run(
            [sys.executable, str(driver), "--problem", "problem.py", "--solution", "solution.py", "--trials", "6",
             "--go-file", "go.json", "--ahead-max-bytes", cap],
            cwd=work, capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        line = next(x for x in res.stdout.splitlines() if x.startswith("BEAVER_KB_TIMING "))
        docs[cap] = json.loads(line.split(" ", 1)[1])
        assert "error" not in docs[cap] and docs[cap]["max_abs_diff"] == 0.0, docs[cap]
    assert docs["4294967296"]["before_go"] == ["import", "inputs", "waited_for_go"]
    assert docs["1"]["before_go"] == ["import", "inputs_sized", "waited_for_go"]
    # sized ahead on the meta device, not drawn; drawn on the GPU once it was held (kernelbench_driver)
    assert "inputs_gpu" in docs["1"]["phases_s"] and "inputs" not in docs["1"]["phases_s"], docs["1"]
    assert "to_device" in docs["1"]["phases_s"]
    print("phases kept:", docs["4294967296"]["phases_s"], "dropped:", docs["1"]["phases_s"])
    work = tmp_path / "oncuda"
    shutil.copytree(kb.testbench, work)
    (work / "solution.py").write_text(sub)
    problem = (work / "problem.py").read_text()
    (work / "problem.py").write_text(
        problem + "\n_orig = get_inputs\ndef get_inputs():\n    return [x.cuda() for x in _orig()]\n"
    )
    res = subprocess.run(
        [sys.executable, str(driver), "--problem", "problem.py", "--solution", "solution.py", "--go-file", "go.json",
         "--go-timeout", "60"],
        cwd=work, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert res.returncode == 1 and "BEAVER_KB_READY" not in res.stdout, res.stdout[-2000:]
    line = next(x for x in res.stdout.splitlines() if x.startswith("BEAVER_KB_TIMING "))
    doc = json.loads(line.split(" ", 1)[1])
    assert doc["side"] == "inputs", doc
    print("on the GPU ahead of the hold:", doc["error"])


def test_a_batch_says_every_task_it_leaves_out(capsys: pytest.CaptureFixture[str]) -> None:
    """A task that cannot run (an applied family whose reference sources the release lacks) is said with the
    other skips and its reason; the release batch on the H200 dropped 26 of them without a word."""
    fa = next(t for t in load_corpus(REAL).tasks if t.id.startswith("flashattention"))
    assert not fa.runnable
    rc = main(["batch", "--protocol", str(ROOT / "scripts" / "release-alternate.toml"), "--corpus", str(REAL),
               "--tasks", "flashattention_*,cuda_*", "--dry-run", "--gpus", "0"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "task(s) skipped:" in err and f"  {fa.id}: {fa.not_runnable_reason}" in err


def test_reuse_checks_times_a_kernelbench_reference_and_runs_no_check_again(
    real: dict[str, Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernelbench instance checked without timing: its stored verdict says the eager reference passed and
    how the broken start failed. With --reuse-checks only the reference's timing runs (nothing is built for
    an eager Model), not the release's eval of the reference nor the broken start's JIT build."""
    import beavertui.engine.validation.validate as v
    from beavertui.engine.corpus import verdicts
    from beavertui.engine.host.gpu import Machine
    from beavertui.engine.timing.speedup import TimingConfig
    from beavertui.engine.toolchain.local import LocalConfig

    kb = real["kb1"]
    cache = tmp_path / "cache"
    first = v.TaskValidation(
        kb.id, kb.label, True, family="kernelbench", reference_kind="eager_model", gpu=H200.slug,
        reference_category="passed", reference_signature="", broken_category="buildability",
        broken_signature="Error building extension", label_agrees=True,
    )  # fmt: skip
    verdicts.save(kb, v.record_of(first), cache)
    assert v.reusable(kb, verdicts.load(kb, H200.slug, cache))
    attempts: list[str] = []
    monkeypatch.setattr(v, "runnable_here", lambda task, machine: None)
    monkeypatch.setattr(v, "_attempt", lambda *a, **k: attempts.append("attempt"))  # fails the test if called
    monkeypatch.setattr(
        v,
        "time_task",
        lambda task, c, *a, **k: v.replace(c, method="torch_events_l2flush_interleaved", reference_ms=1.5),
    )
    machine = Machine(gpu=H200, nvcc="/usr/local/bin/nvcc", cuda="13.0", torch=True)
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=cache, rounds=1))
    [r] = list(v.validate([kb], machine, config, reuse_checks=True))
    assert attempts == [] and r.reference_category == "passed" and r.broken_category == "buildability"
    assert r.valid and r.reference_ms == 1.5
    assert "the stored verdict's reference check (passed) stands" in r.notes
    assert any(n.endswith("; reference timed again") for n in r.notes)


def test_corpus_validate_checks_the_named_tasks_in_the_order_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The validation script names the cheap checks first (kernelbench's JIT builds last); the corpus's own
    order (alphabetical: kernelbench before layernorm) must not undo that."""
    named = [IDS["flash"], IDS["kb2"], IDS["cuda104"], IDS["kb1"]]
    args = ["corpus", "validate", "--corpus", str(REAL), "--json", "--no-timing", "--workers", "1"]
    main([*args, *(x for t in named for x in ("--task", t))])
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith('{"task_id"')]
    assert [r["task_id"] for r in rows] == named


def test_the_builds_bound_to_their_work_dir_are_the_torch_extension_pre_builds(real: dict[str, Task]) -> None:
    """Which real instances' build stages make what only their own work dir can use (the compile cache then
    builds them again): the applied runner's pre-build and a kernelbench candidate's, not the kernelbench
    reference submission's syntax check nor an nvcc build."""

    def bound(key: str, code: str | None = None) -> bool:
        task = real[key]
        return families.build_is_path_bound(families.for_code(task, code or task.broken_start()))

    assert bound("applied") and bound("kb2")
    assert not bound("kb2", families.reference_submission(real["kb2"]))
    assert not any(bound(k) for k in ("cuda59", "cublas", "cufft", "cutlass", "cudabench"))
