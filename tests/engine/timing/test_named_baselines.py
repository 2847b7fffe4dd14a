"""Named baselines (beavertui/engine/timing/named_baselines.py): every bundled task's PyTorch equivalent is
declared with the arguments its module takes, a kernelbench instance's is its problem.py, a malformed
declaration is one line, stored sets hold only for their GPU and equivalent, and the speedup arithmetic."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.errors import BeaverError
from beavertui.engine.host.ceilings import Ceilings
from beavertui.engine.session.events import BaselineTime, GpuSignature, SessionHeader
from beavertui.engine.timing import named_baselines as nb

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "corpus"
RELEASE = ROOT / "tests" / "data" / "release" / "data"
H200 = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")
L4 = GpuSignature(slug="nvidia_l4_sm_89_cuda_13_0", name="NVIDIA L4", compute_capability="8.9")


def _params(module: Path, fn: str) -> tuple[set[str], set[str], bool]:
    """(required, optional, takes **kwargs) of a module-level function, read without importing torch."""
    tree = ast.parse(module.read_text())
    f = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn)
    names = [a.arg for a in f.args.args]
    required = set(names[: len(names) - len(f.args.defaults)])
    return required, set(names) - required, f.args.kwarg is not None


def test_every_bundled_task_declares_an_equivalent_its_module_accepts() -> None:
    tasks = load_corpus(CORPUS).tasks
    assert len(tasks) == 41
    for t in tasks:
        eq = nb.equivalent(t)
        assert eq is not None, t.id
        assert eq.style == "native" and eq.method == "torch_events_l2flush_queued"
        assert eq.module.parent == CORPUS / "_torch"
        for fn in ("get_inputs", "get_init_inputs"):
            required, optional, kwargs = _params(eq.module, fn)
            assert required <= set(eq.args), (t.id, fn, required - set(eq.args))
            assert kwargs or set(eq.args) <= required | optional, (t.id, fn)
        classes = {n.name for n in ast.parse(eq.module.read_text()).body if isinstance(n, ast.ClassDef)}
        assert "Model" in classes
        assert ("VendorModel" in classes) == (eq.vendor is not None), t.id


def test_tasks_with_the_same_shape_share_one_equivalent() -> None:
    tasks = {t.id: t for t in load_corpus(CORPUS).tasks}

    def key(tid: str) -> str:
        eq = nb.equivalent(tasks[tid])
        assert eq is not None
        return eq.share_key()

    assert len({key(f"reduce_0{i}") for i in range(4)}) == 1
    assert key("scan_00") == key("scan_01") != key("scan_02")  # int32 and float32
    assert key("gemm_tc_00") == key("gemm_tc_02") != key("gemm_tc_01")
    assert key("flashattn_v2_04") == key("flashattn_v2_06")  # the long configuration is correctness only


def test_a_kernelbench_instance_times_its_problem_and_other_families_say_why() -> None:
    tasks = {t.id: t for t in load_corpus(RELEASE).tasks}
    kb = tasks["kernelbench_level1_904__logic_error__a0000004"]
    eq = nb.equivalent(kb)
    assert eq is not None and eq.module == kb.testbench / "problem.py"
    assert eq.style == "kernelbench" and eq.method == "torch_events_l2flush" and dict(eq.args) == {}
    cuda = tasks["cuda_901__compile_error__a0000001"]
    assert nb.equivalent(cuda) is None
    assert nb.why_none(cuda) == "family cuda: no PyTorch equivalent (only kernelbench has one)"


def _copy(tmp: Path, task: str = "softmax_00") -> Task:
    shutil.copytree(CORPUS / "_torch", tmp / "_torch")
    shutil.copytree(CORPUS / "_common", tmp / "_common")
    shutil.copytree(CORPUS / task, tmp / task)
    (tmp / task / "baselines").mkdir(exist_ok=True)
    return next(t for t in load_corpus(tmp).tasks if t.id == task)


def _edit(task: Task, block: object) -> None:
    p = task.root / "input.json"
    doc = json.loads(p.read_text())
    doc["baselines"] = block
    p.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ({"torch": {"args": {}}}, "softmax_00: input.json baselines.torch.module: Field required"),
        ({"torch": {"module": "_torch/softmax.py", "argz": {}}}, "baselines.torch.argz: Extra inputs"),
        ({"torch": {"module": "_torch/none.py"}}, "baselines.torch.module '_torch/none.py': no such file"),
        ({"torch": {"module": "../../etc/passwd"}}, "is outside the corpus"),
    ],
)
def test_a_malformed_declaration_is_one_line(tmp_path: Path, block: object, said: str) -> None:
    task = _copy(tmp_path)
    _edit(task, block)
    with pytest.raises(BeaverError) as exc:
        nb.equivalent(task)
    assert said in str(exc.value) and "\n" not in str(exc.value)


DRIVER_DOC = {
    "style": "native",
    "torch": "2.9.0",
    "trials": 4,
    "warmup": 3,
    "flush_bytes": 268435456,
    "variants": {
        "eager": {"samples_ms": [0.30, 0.32, 0.31, 0.29], "max_abs_diff": 0.0},
        "compile": {"samples_ms": [0.20, 0.20, 0.22, 0.21]},
        "compile_ro": {"error": "RuntimeError: stand-in refusal"},
        "graph": {"samples_ms": [0.28, 0.28, 0.28, 0.28]},
    },
}


def test_a_stored_set_holds_only_for_its_gpu_and_equivalent(tmp_path: Path) -> None:
    task = _copy(tmp_path)
    eq = nb.equivalent(task)
    assert eq is not None
    found = nb.from_driver(
        task, eq, H200, DRIVER_DOC, Ceilings(gpu=H200, copy_gbps=4000.0, bf16_tflops=700.0)
    )
    eager = found.time_of("eager")
    assert eager is not None and eager.median_ms == pytest.approx(0.305) and eager.samples[0] == 0.30
    ro = found.time_of("compile_ro")
    assert ro is not None and ro.median_ms is None and ro.error == "RuntimeError: stand-in refusal"
    where = nb.save(task, found, tmp_path / "cache")
    assert where == task.root / "baselines" / "named" / f"{H200.slug}.json"
    assert nb.load(task, H200, tmp_path / "cache") == found
    assert nb.load(task, L4, tmp_path / "cache") is None
    _edit(
        task, {"torch": {"module": "_torch/softmax.py", "args": {"rows": 8, "cols": 8, "dtype": "float32"}}}
    )
    assert nb.load(task, H200, tmp_path / "cache") is None  # another shape: the stored times no longer hold


def test_a_driver_that_timed_nothing_is_one_line(tmp_path: Path) -> None:
    task = _copy(tmp_path)
    eq = nb.equivalent(task)
    assert eq is not None
    with pytest.raises(BeaverError, match=r"^softmax_00: torch is not importable here"):
        nb.from_driver(task, eq, H200, {"error": "torch is not importable here (x)", "skip": True})


def test_header_times_and_speedups(tmp_path: Path) -> None:
    task = _copy(tmp_path)
    eq = nb.equivalent(task)
    assert eq is not None
    cache = tmp_path / "cache"
    assert nb.header_times(task, None, cache) == []
    assert nb.header_times(task, H200, cache) == []  # nothing stored, no ceilings
    nb.save(task, nb.from_driver(task, eq, H200, DRIVER_DOC, Ceilings(gpu=H200, copy_gbps=4000.0)), cache)
    times = nb.header_times(task, H200, cache)
    assert [b.name for b in times] == ["eager", "compile", "graph", "roofline"]  # compile_ro failed
    eager = times[0]
    assert eager.method == "torch_events_l2flush_queued"
    assert "PyTorch eager" in eager.note and "torch 2.9.0" in eager.note and "median of 4 calls" in eager.note
    roof = times[-1]
    # softmax_00 declares 536870912 bytes: at 4000 GB/s that is 0.134 ms; no flop ceiling recorded
    assert roof.median_ms == pytest.approx(536870912 / 4000e9 * 1e3)
    assert roof.note == "5.369e+08 B at 4000 GB/s (device copy)"
    got = nb.speedups(times, 0.2)
    assert got["eager"] == pytest.approx(0.305 / 0.2)
    assert got["roofline"] == pytest.approx(roof.median_ms / 0.2)
    assert nb.speedups(times, None) == {} and nb.speedup_against(1.0, 0.0) is None


def test_a_header_without_baselines_still_reads() -> None:
    doc = json.loads((ROOT / "sessions" / "demo").glob("*.jsonl").__next__().read_text().splitlines()[0])
    assert "baselines" not in doc
    assert SessionHeader.model_validate(doc).baselines == []
    with_b = {**doc, "baselines": [{"name": "eager", "median_ms": 0.5, "method": "torch_events_l2flush"}]}
    assert SessionHeader.model_validate(with_b).baselines == [
        BaselineTime(name="eager", median_ms=0.5, method="torch_events_l2flush")
    ]


def test_check_name() -> None:
    assert nb.check_name("reference") == "reference" and nb.check_name("compile_ro") == "compile_ro"
    with pytest.raises(BeaverError, match="unknown baseline 'fast': expected reference or one of eager, "):
        nb.check_name("fast")
