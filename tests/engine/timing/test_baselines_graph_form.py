"""The capturable form of a PyTorch equivalent (``GraphModel``) for the CUDA Graph baseline: the real driver
script (beavertui/engine/timing/baselines_driver.py) in its own process with the stand-in torch of
tests/torch_standin.py captures and replays GraphModel where the module defines one, after checking its
output equal to Model's, and fails the graph variant in one line where it is not; the stored set, the table,
the progress line and a session's header say the graph time replays that form; sets stored before still
load. Then the histogram equivalent's GraphModel and the claim of its docstring against the bundled tasks'
sizes (no torch needed)."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import GpuSignature
from beavertui.engine.timing import named_baselines as nb
from beavertui.engine.validation import baselines_record as rec
from tests import torch_standin

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "corpus"
DRIVER = ROOT / "beavertui" / "engine" / "timing" / "baselines_driver.py"
TAG = "BEAVER_BASELINES "
H200 = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")

#: A capturable form whose replay the stand-in times at 0.6 ms (Model's capture: 1.5 ms).
GRAPH_MODEL = '''

class GraphModel(torch.nn.Module):
    """The same output, capturable."""

    variant = "graph_model"
    replay_cost = 0.6

    def forward(self, x):
        return x
'''

#: A form that does not compute Model's output (each element one more).
WRONG_GRAPH_MODEL = '''

class GraphModel(torch.nn.Module):
    """Off by one."""

    variant = "graph_model"
    replay_cost = 0.6

    def forward(self, x):
        return torch.Tensor(x.value + 1, x.n)
'''


def run_driver(tmp: Path, module_text: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    site = torch_standin.write(tmp / "site")
    module = tmp / "problem.py"
    module.write_text(module_text)
    proc = subprocess.run(
        [sys.executable, str(DRIVER), "--module", str(module), "--args", '{"n": 4, "dtype": "float32"}',
         "--trials", "3", "--warmup", "1"],
        capture_output=True, text=True, cwd=tmp, timeout=120,
        env={**os.environ, "PYTHONPATH": str(site), **(env or {})},
    )  # fmt: skip
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(TAG)]
    assert proc.returncode == 0 and len(lines) == 1, proc.stdout + proc.stderr
    doc: dict[str, Any] = json.loads(lines[0][len(TAG) :])
    return doc


def test_the_graph_variant_replays_graph_model_where_the_module_defines_one(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    doc = run_driver(tmp_path, torch_standin.PROBLEM + GRAPH_MODEL, {"STANDIN_CALLS": str(calls)})
    v = doc["variants"]
    assert v["graph"]["samples_ms"] == pytest.approx([0.6] * 3)  # GraphModel's replay, not Model's 1.5
    assert v["graph"]["max_abs_diff"] == 0.0
    for name, ms in {"eager": 2.0, "compile": 1.0, "compile_ro": 0.8}.items():
        assert v[name]["samples_ms"] == pytest.approx([ms] * 3), name
    assert doc["graph_replays"] == {"class": "GraphModel", "doc": "The same output, capturable."}
    # Model and GraphModel once each (the check), GraphModel's warm-up call and capture, then the first replay
    log = calls.read_text().split()
    first = log.index("graph_model")
    assert log[first - 1 : first + 4] == ["eager", "graph_model", "graph_model", "graph_model", "graph"]
    assert log.count("graph_model") == 3  # never called again: the replays are the captured GraphModel


def test_a_graph_model_that_differs_from_model_fails_the_graph_variant_in_one_line(tmp_path: Path) -> None:
    doc = run_driver(tmp_path, torch_standin.PROBLEM + WRONG_GRAPH_MODEL)
    v = doc["variants"]
    assert v["graph"] == {
        "error": "RuntimeError: GraphModel is not Model's computation: its output differs from Model's on the "
        "same inputs (max abs diff 1.0); not timed"
    }
    assert len(v["eager"]["samples_ms"]) == 3 and len(v["compile"]["samples_ms"]) == 3  # the others go on


def test_a_module_without_graph_model_captures_model_as_before(tmp_path: Path) -> None:
    doc = run_driver(tmp_path, torch_standin.PROBLEM)
    assert doc["variants"]["graph"]["samples_ms"] == pytest.approx([1.5] * 3)
    assert doc["graph_replays"] is None


def _corpus(tmp: Path, module_text: str) -> list[Any]:
    """histogram_00 with the stand-in problem (plus ``module_text``'s additions) as its equivalent."""
    root = tmp / "corpus"
    for name in ("_common", "histogram_00"):
        shutil.copytree(CORPUS / name, root / name)
    shutil.rmtree(root / "histogram_00" / "baselines" / "named", ignore_errors=True)
    (root / "_torch").mkdir()
    (root / "_torch" / "standin.py").write_text(module_text)
    p = root / "histogram_00" / "input.json"
    doc = json.loads(p.read_text())
    doc["baselines"] = {"torch": {"module": "_torch/standin.py", "args": {"n": 4, "dtype": "float32"}}}
    p.write_text(json.dumps(doc))
    return list(load_corpus(root).tasks)


def test_the_stored_set_and_every_table_say_the_graph_time_replays_graph_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = _corpus(tmp_path, torch_standin.PROBLEM + GRAPH_MODEL)
    monkeypatch.setenv("PYTHONPATH", str(torch_standin.write(tmp_path / "site")))
    cache = tmp_path / "cache"
    said: list[str] = []
    (out,) = rec.record(tasks, H200, jobs=1, trials=3, warmup=1, cache=cache, progress=said.append)
    assert out.found is not None, out.reason
    found = nb.load(tasks[0], H200, cache)
    assert found is not None
    graph = found.time_of("graph")
    assert graph is not None and graph.median_ms == pytest.approx(0.6)
    assert (graph.replays, graph.note) == ("GraphModel", "The same output, capturable.")
    eager = found.time_of("eager")
    assert eager is not None and eager.replays is None
    assert any("graph 0.6 ms (replays GraphModel)" in line for line in said), said
    (row,) = rec.table_rows(tasks, H200, cache)
    assert row[rec.TABLE_COLUMNS.index("graph ms")].startswith("0.6 (GraphModel)")
    assert "graph (GraphModel): the CUDA Graph replays the equivalent's capturable form" in rec.TABLE_NOTE
    header = {b.name: b for b in nb.header_times(tasks[0], H200, cache)}
    assert header["graph"].note.startswith(
        "CUDA Graph replay of the eager call, replays GraphModel, the equivalent's capturable form checked "
        "equal to Model's output: The same output, capturable."
    )
    assert "GraphModel" not in header["eager"].note


def test_sets_stored_before_the_capturable_form_still_load() -> None:
    """The H100 sets of the histogram tasks, stored before GraphModel: their graph variant failed capturing
    bincount, and they read with no replayed form."""
    p = CORPUS / "histogram_00" / "baselines" / "named" / "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0.json"
    old = json.loads(p.read_text())
    assert all("replays" not in t for t in old["times"])
    found = nb.BaselineSet.model_validate(old)
    graph = found.time_of("graph")
    assert graph is not None and graph.replays is None and graph.note is None and graph.replay_note() == ""
    assert graph.median_ms is None and "capture" in (graph.error or "")


# ------------------------------------------------------------------ the histogram equivalent


def _histogram_graph_model() -> ast.ClassDef:
    tree = ast.parse((CORPUS / "_torch" / "histogram.py").read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GraphModel"]
    return cls


def test_the_histogram_equivalent_defines_a_capturable_form_of_fixed_range() -> None:
    cls = _histogram_graph_model()
    source = ast.unparse(cls)
    assert "torch.histc(data.to(torch.float32), bins=256, min=0, max=255).to(torch.int64)" in source
    assert "bincount" not in ast.unparse(cls.body[-1])  # forward reads nothing back to the host


def test_the_histogram_range_claim_holds_for_the_bundled_tasks_sizes() -> None:
    """The docstring says for which n the float32 counts are exact and which n the tasks time: every
    histogram task's input.json n is within the bound and is the n it names, and the bound holds: at n bytes
    uniform over 256 values a bin's mean count plus 100 standard deviations stays below 2**24."""
    doc = ast.get_docstring(_histogram_graph_model()) or ""
    bound = re.search(r"Exact for n <= 2\*\*(\d+) bytes", doc)
    stated = re.search(r"tasks time n = 2\*\*(\d+)", doc)
    assert bound is not None and stated is not None, doc
    n_max, n_stated = 2 ** int(bound.group(1)), 2 ** int(stated.group(1))
    sizes = set()
    for p in sorted(CORPUS.glob("histogram_*/input.json")):
        torch_decl = json.loads(p.read_text())["baselines"]["torch"]
        assert torch_decl["module"] == "_torch/histogram.py", p
        sizes.add(int(torch_decl["args"]["n"]))
    assert len(list(CORPUS.glob("histogram_*/input.json"))) >= 3
    assert sizes == {n_stated} and n_stated <= n_max
    p = 1 / 256
    mean, sd = n_max * p, math.sqrt(n_max * p * (1 - p))
    assert mean + 100 * sd < 2**24
    assert f"2**{int(math.log2(mean))} on average" in doc and sd < 2**12  # the figures the docstring gives


@pytest.mark.gpu
def test_the_histogram_graph_baseline_replays_histc_on_the_gpu(tmp_path: Path) -> None:
    """Through real torch on a GPU: bincount is not captured, GraphModel is, its counts equal bincount's
    (checked by the driver before timing) and its replay is timed."""
    pytest.importorskip("torch")
    proc = subprocess.run(
        [sys.executable, str(DRIVER), "--module", str(CORPUS / "_torch" / "histogram.py"), "--args",
         json.dumps({"n": 1 << 24}), "--trials", "3", "--variants", "eager,graph"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith(TAG)]
    assert proc.returncode == 0 and len(lines) == 1, (proc.stdout + proc.stderr)[-2000:]
    doc = json.loads(lines[0][len(TAG) :])
    graph = doc["variants"]["graph"]
    assert len(graph.get("samples_ms", [])) == 3, graph
    assert graph["max_abs_diff"] == 0.0
    assert doc["graph_replays"]["class"] == "GraphModel"
