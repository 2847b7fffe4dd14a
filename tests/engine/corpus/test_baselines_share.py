"""Reference baselines shared by tasks with the same reference, harness and timing configuration."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from beavertui.engine.corpus.harness import harness_hash, reference_hash
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.corpus.task import Task
from beavertui.engine.session.events import GpuSignature
from beavertui.engine.timing import baselines
from tests.corpus_copies import with_copies

DATA = Path(__file__).parents[2] / "data"
GPU = GpuSignature(slug="nvidia_h200_sm_90_cuda_13_0", name="NVIDIA H200", compute_capability="9.0")
FIRST = "kernelbench_level1_904__logic_error__a0000004"
SIBLING = "kernelbench_level1_904__memory_crash__a0000008"


def _release_with_a_sibling(tmp_path: Path) -> Path:
    """The release fixture with a second instance of kernelbench problem 904: the same reference and
    testbench, another broken start and label (as the release's instances of one problem are)."""
    root = tmp_path / "release"
    shutil.copytree(DATA / "release", root)
    data = root / "data"
    shutil.copytree(data / FIRST, data / SIBLING)
    (data / SIBLING / "broken_start.cu").write_text("# another broken start\n")
    inst = json.loads((data / SIBLING / "instance.json").read_text())
    inst.update(id=SIBLING, error_category="memory_crash")
    (data / SIBLING / "instance.json").write_text(json.dumps(inst))
    inp = json.loads((data / SIBLING / "input.json").read_text())
    inp["task_id"] = SIBLING
    (data / SIBLING / "input.json").write_text(json.dumps(inp))
    return root


def _task(root: Path, task_id: str) -> Task:
    return load_corpus(root / "data").get(task_id)


def _measured(task: Task) -> baselines.Baseline:
    return baselines.Baseline(
        task_id=task.id, gpu=GPU, method="torch_events_l2flush_interleaved", median_ms=1.25, cv=0.01,
        samples=[1.25, 1.24, 1.26], reference_hash=reference_hash(task), harness_hash=harness_hash(task),
    )  # fmt: skip


def test_a_baseline_is_shared_by_tasks_with_the_same_reference_harness_and_configuration(
    tmp_path: Path,
) -> None:
    root = _release_with_a_sibling(tmp_path)
    first, sibling = _task(root, FIRST), _task(root, SIBLING)
    cache = tmp_path / "cache"
    assert baselines.share_key(first) == baselines.share_key(sibling)
    assert baselines.load(sibling, GPU, harness_hash(sibling), cache) is None  # nothing measured yet
    b = _measured(first)
    assert baselines.save(first, b, cache) == cache / "baselines" / FIRST / f"{GPU.slug}.json"
    own = baselines.load(first, GPU, harness_hash(first), cache)
    assert own == b and own.note is None
    got = baselines.load(sibling, GPU, harness_hash(sibling), cache)
    assert got is not None and got.task_id == FIRST and got.median_ms == 1.25 and got.samples == b.samples
    assert got.note == baselines.shared_note(FIRST)
    assert got.note.endswith(f"measured for {FIRST}") and "same reference and harness" in got.note
    # the note is said when found, never stored
    stored = json.loads(baselines.shared_path(baselines.share_key(first), GPU.slug, cache).read_text())
    assert "note" not in stored and stored["task_id"] == FIRST
    # only on the same GPU signature
    other = GPU.model_copy(update={"slug": "nvidia_h100_sm_90_cuda_13_0"})
    assert baselines.load(sibling, other, harness_hash(sibling), cache) is None
    # a task's own baseline comes first
    mine = _measured(sibling).model_copy(update={"median_ms": 2.5})
    baselines.save(sibling, mine, cache)
    again = baselines.load(sibling, GPU, harness_hash(sibling), cache)
    assert again is not None and again.median_ms == 2.5 and again.note is None


def test_another_reference_harness_or_timing_configuration_shares_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    root = _release_with_a_sibling(tmp_path)
    baselines.save(_task(root, FIRST), _measured(_task(root, FIRST)), cache)
    sib = root / "data" / SIBLING

    def shares() -> bool:
        s = _task(root, SIBLING)
        return baselines.load(s, GPU, harness_hash(s), cache) is not None

    assert shares()
    ref = (sib / "reference.py").read_text()
    (sib / "reference.py").write_text(ref + "\n# another reference\n")
    assert not shares()
    (sib / "reference.py").write_text(ref)
    problem = (sib / "testbench" / "problem.py").read_text()
    (sib / "testbench" / "problem.py").write_text(problem + "\n# another harness\n")
    assert not shares()
    (sib / "testbench" / "problem.py").write_text(problem)
    assert shares()
    # same reference and harness, but the reference is built or run another way: not the same measurement
    inp = json.loads((sib / "input.json").read_text())
    for change in (
        {"test_command": inp["test_command"] + " --again"},
        {"timeouts": {"build_s": 5, "run_s": 5}},
    ):
        (sib / "input.json").write_text(json.dumps({**inp, **change}))
        s = _task(root, SIBLING)
        assert baselines.share_key(s) != baselines.share_key(_task(root, FIRST))
        assert not shares()
    (sib / "input.json").write_text(json.dumps(inp))
    assert shares()
    # a task of another family with its own reference shares nothing with them
    cuda = _task(root, "cuda_901__compile_error__a0000001")
    assert baselines.load(cuda, GPU, harness_hash(cuda), cache) is None


def test_native_tasks_keep_their_baselines_in_their_folder_and_share_by_content(tmp_path: Path) -> None:
    root = with_copies(tmp_path / "corpus", {"sleepy_b": None})
    corpus = load_corpus(root)
    a, b = corpus.get("sleepy"), corpus.get("sleepy_b")
    cache = tmp_path / "cache"
    base = _measured(a).model_copy(update={"method": "beaver_time_ms"})
    assert baselines.save(a, base, cache) == root / "sleepy" / "baselines" / f"{GPU.slug}.json"
    assert not (root / "sleepy_b" / "baselines").exists()
    got = baselines.load(b, GPU, harness_hash(b), cache)
    assert got is not None and got.task_id == "sleepy" and got.note == baselines.shared_note("sleepy")
