"""Corpus loading: both layouts, malformed tasks reported in one line each, runnability reasons."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import corpus_root, load_corpus, runnable_here
from beavertui.engine.host.gpu import Machine
from beavertui.engine.session.events import GpuSignature
from tests.cli_in_process import run_cli

DATA = Path(__file__).parents[2] / "data"
H200 = GpuSignature(
    slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0", cuda="13.0"
)


def test_release_layout_loads_every_kind() -> None:
    load = load_corpus(DATA / "release")
    assert load.root == DATA / "release" / "data"
    assert load.problems == ()
    by_id = {t.id: t for t in load.tasks}
    assert len(by_id) == 7
    kb = by_id["kernelbench_level1_904__logic_error__a0000004"]
    assert kb.layout == "release" and kb.solution_file == "solution.py" and kb.language == "python"
    assert kb.display_label == "functional_correctness" and kb.label == "logic_error"
    assert kb.pythonpath == (DATA / "release" / "harness" / "_vendor",)
    assert kb.broken_start_path.name == "broken_start.cu"
    cut = by_id["cutlass_905_basic_gemm__perf_broken__a0000005"]
    assert cut.broken_start_path.name == "broken_start.h" and cut.min_sm == 80
    assert ("reference_sources/cutlass") in [d for _, d in cut.linked_dirs]
    tk = by_id["thunderkittens_907_axpy__compile_error__a0000007"]
    assert tk.solution_file == "kernels/axpy/axpy.cu"
    assert [d for _, d in tk.linked_dirs] == ["reference_sources/cutlass", "reference_sources/ThunderKittens"]
    fa = by_id["flashattention_906_fwd__perf_broken__a0000006"]
    assert fa.runnable is False and "applied task" in (fa.not_runnable_reason or "")


def test_release_data_folder_given_directly() -> None:
    assert corpus_root(DATA / "release" / "data") == DATA / "release" / "data"
    load = load_corpus(DATA / "release" / "data")
    assert len(load.tasks) == 7


def test_a_corpus_named_by_a_relative_path_gives_tasks_absolute_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # commands run inside a work dir: a PYTHONPATH entry or a linked folder relative to where the command
    # was typed would point nowhere there (the release's harness package, for the applied families)
    monkeypatch.chdir(DATA)
    rel = load_corpus(Path("release"))
    absolute = load_corpus(DATA / "release")
    assert rel.root == absolute.root and rel.root.is_absolute()
    for a, b in zip(rel.tasks, absolute.tasks, strict=True):
        assert (a.root, a.pythonpath, a.linked_dirs, a.extra_dirs) == (
            b.root,
            b.pythonpath,
            b.linked_dirs,
            b.extra_dirs,
        )
        assert all(p.is_absolute() for p in (a.root, *a.pythonpath, *(s for s, _ in a.linked_dirs)))


def test_native_layout_and_common_dir() -> None:
    load = load_corpus(DATA / "native")
    assert load.problems == ()
    vs = load.get("vec_scale")
    assert vs.layout == "native"
    assert vs.extra_dirs == ((DATA / "native" / "_common", "_common"),)
    assert vs.benchmark_command == "./test.out --bench 20"
    assert vs.work_flop == 134217728 and vs.work_bytes == 1073741824
    assert vs.timeouts.run_s == 60 and vs.min_sm == 90
    assert vs.error_log() is not None


def test_shared_layout_metadata_of_the_real_release_parses(tmp_path: Path) -> None:
    """input.json/instance.json of the seven real release kinds load once the files they name exist."""
    src = Path("/work/shared/cudabeaver-layout/data")
    if not src.is_dir():
        pytest.skip("shared release excerpt not present")
    for d in src.iterdir():
        if d.name.startswith("_"):
            continue
        dst = tmp_path / d.name
        dst.mkdir()
        for name in ("input.json", "instance.json"):
            shutil.copy(d / name, dst / name)
        for line in (d / "FILES.txt").read_text().split():
            p = dst / line
            if line.endswith(("input.json", "instance.json")):
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x\n")
    load = load_corpus(tmp_path)
    assert load.problems == ()
    assert len(load.tasks) == 7
    fa = load.get("flashattention_fwd_hdim128_bf16__perf_broken__24698da5")
    assert fa.runnable is False
    cut = load.get("cutlass_00_basic_gemm__perf_broken__b536032b")
    assert cut.runnable is False and "missing" in (cut.not_runnable_reason or "")


def _copy_native(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(DATA / "native", root)
    return root


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda t: (t / "input.json").write_text("{not json"), "spin/input.json: not valid JSON"),
        (lambda t: (t / "prompt.txt").unlink(), "spin/prompt.txt: missing"),
        (lambda t: _edit(t / "input.json", build_command=3), "spin/input.json: field 'build_command'"),
        (lambda t: _edit(t / "input.json", solution_file="../../evil.cu"), "escapes the task folder"),
        (lambda t: _edit(t / "instance.json", error_category="weird"), "unknown error_category 'weird'"),
        (lambda t: _edit(t / "instance.json", id="other"), "differs from the folder name"),
        (lambda t: (t / "testbench" / "link.h").symlink_to("/etc/passwd"), "symbolic link escapes"),
        (lambda t: (t / "broken_start.cu").write_text("changed"), "broken_start_hash"),
        (lambda t: (t / "input.json").write_text("[1, 2]"), "expected a JSON object"),
    ],
)
def test_malformed_task_is_one_line_and_others_still_load(tmp_path: Path, mutate, expected: str) -> None:
    root = _copy_native(tmp_path)
    mutate(root / "spin")
    load = load_corpus(root)
    assert [t.id for t in load.tasks] == ["vec_scale"]
    assert len(load.problems) == 1
    assert expected in load.problems[0]
    assert "\n" not in load.problems[0]


def _edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_runnable_here_reasons() -> None:
    load = load_corpus(DATA / "release")
    kb = load.get("kernelbench_level1_904__logic_error__a0000004")
    cut = load.get("cutlass_905_basic_gemm__perf_broken__a0000005")
    gpu_torch = Machine(gpu=H200, nvcc="/usr/bin/nvcc", cuda="13.0", torch=True)
    assert runnable_here(kb, gpu_torch) is None
    assert runnable_here(kb, Machine(gpu=H200, nvcc="/usr/bin/nvcc", cuda="13.0", torch=False)) == (
        "torch is not importable by this interpreter"
    )
    assert (
        runnable_here(cut, Machine(gpu=None, nvcc="/usr/bin/nvcc", cuda="13.0", torch=True))
        == "no NVIDIA GPU visible"
    )
    assert runnable_here(cut, Machine(gpu=H200, nvcc=None, cuda=None, torch=True)) == "nvcc not found on PATH"
    old = GpuSignature(slug="x", name="Tesla V100", compute_capability="7.0")
    assert runnable_here(cut, Machine(gpu=old, nvcc="/usr/bin/nvcc", cuda="13.0", torch=True)) == (
        "needs sm_80, this GPU is sm_70"
    )


def test_cli_list_json_and_bad_corpus(tmp_path: Path) -> None:
    out = run_cli("corpus", "list", "--corpus", DATA / "release", "--json", check=True)
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    assert len(rows) == 7
    assert {r["id"] for r in rows if r["reason"] and "applied" in r["reason"]} == {
        "flashattention_906_fwd__perf_broken__a0000006"
    }
    # as CSV each task says why it cannot run here (a CSV file has no note to number the reasons in)
    out = run_cli("corpus", "list", "--corpus", DATA / "release", "--format", "csv", check=True)
    listed = {r["id"]: r for r in csv.DictReader(io.StringIO(out.stdout))}
    assert set(listed) == {r["id"] for r in rows}
    for r in rows:
        assert listed[r["id"]]["runs here"] == ("yes" if r["runnable"] else "no")
        assert listed[r["id"]]["why not"] == ("" if r["runnable"] else r["reason"])
    bad = run_cli("corpus", "list", "--corpus", tmp_path / "nope")
    assert bad.returncode == 2
    assert bad.stderr.strip() == f"beavertui: corpus {tmp_path / 'nope'}: not a folder"


def test_the_cudabench_fixture_speaks_the_release_oracle(tmp_path: Path) -> None:
    """The fixture's compare_output.py prints T or F and exits 0, as the release's do, so that the family's
    oracle (families.oracle_failure) reads a matching output as correct and a differing one as wrong."""
    import struct

    from beavertui.engine.corpus import families

    task = load_corpus(DATA / "release").get("cudabench_903__memory_crash__a0000003")
    script = task.testbench / "test" / "compare_output.py"
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "expected.bin").write_bytes(struct.pack("3f", 1.0, 2.0, 3.0))
    verdicts = []
    for out in ((1.0, 2.0, 3.0), (1.0, 2.5, 3.0)):
        (tmp_path / "data" / "out.bin").write_bytes(struct.pack("3f", *out))
        run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0
        verdicts.append(families.oracle_failure(task, run.returncode, run.stdout))
    assert verdicts == [None, "compare_output: F (output differs from the reference output)"]
