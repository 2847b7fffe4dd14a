"""corpus validate on the CPU-only fixture: verdicts, label agreement, reference timing, baseline file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from beavertui.engine import baselines, runner
from beavertui.engine.corpus import load_corpus
from beavertui.engine.events import GpuSignature
from beavertui.engine.gpu import Machine
from beavertui.engine.localtool import LocalConfig
from beavertui.engine.timing import TimingConfig
from beavertui.engine.validate import validate

DATA = Path(__file__).parent / "data"
FAKE_GPU = GpuSignature(
    slug="test_gpu_sm_90_cuda_13_0", name="Test GPU", compute_capability="9.0", cuda="13.0"
)


def test_validate_records_verdicts_timing_and_baseline(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(DATA / "cpu", root)
    task = load_corpus(root).get("sleepy")
    machine = Machine(gpu=FAKE_GPU, nvcc="/usr/local/bin/nvcc", cuda="13.0", torch=False)
    config = LocalConfig(base_dir=tmp_path / "work", timing=TimingConfig(cache=tmp_path / "cache", rounds=1))
    [r] = list(validate([task], machine, config))
    assert r.runnable and r.valid
    assert r.reference_category == "passed"
    assert r.broken_category == "functional_correctness" and r.label_agrees is True
    assert r.method == "beaver_time_ms" and r.reference_ms == 2.0 and r.reference_cv == 0.0
    assert r.baseline_path == str(root / "sleepy" / "baselines" / "test_gpu_sm_90_cuda_13_0.json")
    stored = json.loads(Path(r.baseline_path).read_text())
    assert stored["median_ms"] == 2.0 and len(stored["samples"]) == 12
    assert baselines.load(task, FAKE_GPU, runner.harness_hash(task)) is not None


def test_validate_reports_not_runnable_without_gpu() -> None:
    task = load_corpus(DATA / "cpu").get("sleepy")
    [r] = list(validate([task], Machine(gpu=None, nvcc=None, cuda=None, torch=False), timing=False))
    assert not r.runnable and r.reason == "no NVIDIA GPU visible" and not r.valid
