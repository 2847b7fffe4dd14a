"""Task families as objects (engine/corpus/families/): every family of the bundled corpus and of the release maps
to exactly one registered Family, which decides how its tasks are built, how a run's verdict is read and which
timing method measures its speed.

tests/data/release_families.json holds each release instance's ``task_family`` (instance.json) and ``level``
(input.json), all 228, read from the public CUDABeaver release (the commit it names) with ``git show``.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest

from beavertui.engine.corpus import families
from beavertui.engine.corpus.families import BUNDLED, FAMILIES, Family, family_for, family_of
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.timing.registry import SPEED_METHODS, default_method

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
RELEASE = json.loads((DATA / "release_families.json").read_text())["instances"]

#: What each family of the release is, as it was decided before families were objects: (recorded name,
#: reference kind, speed). Stored verdicts and the baselines' share key hold these values.
EXPECTED = {
    "cuda": ("cuda", "drop_in", "interleaved"),
    "cublas": ("cublas", "drop_in", "interleaved"),
    "cufft": ("cufft", "drop_in", "interleaved"),
    "cusolver": ("cusolver", "drop_in", "interleaved"),
    "cusparse": ("cusparse", "drop_in", "interleaved"),
    "thunderkittens": ("thunderkittens", "drop_in", "interleaved"),
    "kernelbench": ("kernelbench", "eager_model", "kernelbench_driver"),
    "cutlass": ("cutlass", "in_binary", "testbench_lines"),
    "cudabench": ("cudabench", "none", "none"),
    "flashattention": ("flashattention", "applied_runner", "testbench_lines"),
    "layernorm": ("layernorm", "applied_runner", "testbench_lines"),
    "cufft_samples": ("cufft_samples", "applied_runner", "testbench_lines"),
}


def _claimants(layout: str, family: str, level: str | None) -> list[Family]:
    return [f for f in FAMILIES if f.claims(layout, family, level)]


def test_every_release_family_maps_to_exactly_one_registered_family() -> None:
    seen: Counter[str] = Counter()
    for instance, (family, level) in RELEASE.items():
        found = _claimants("release", family, level)
        assert len(found) == 1, f"{instance} ({family}, {level}): claimed by {[f.name for f in found]}"
        assert family_for("release", family, level) is found[0]
        seen[found[0].name] += 1
    assert sum(seen.values()) == 228
    assert set(seen) == set(EXPECTED)  # the release has these 12 families, each registered
    assert seen["kernelbench"] == 83 and seen["cuda"] == 60 and seen["cutlass"] == 20


def test_every_bundled_task_maps_to_the_bundled_family_alone() -> None:
    corpus = load_corpus(ROOT / "corpus")
    assert len(corpus.tasks) == 41
    names = {t.family for t in corpus.tasks}
    assert len(names) >= 9  # flashattn_v2, gemm_tc, softmax...: all drop-in, whatever their task_family
    for task in corpus.tasks:
        assert _claimants(task.layout, task.family, task.level) == [BUNDLED], task.id
        assert family_of(task) is BUNDLED and (BUNDLED.name, BUNDLED.reference, BUNDLED.speed) == (
            "drop-in", "drop_in", "interleaved",
        )  # fmt: skip


def test_every_registered_family_claims_a_family_of_the_corpora() -> None:
    used = {family_for("release", fam, level) for fam, level in RELEASE.values()} | {BUNDLED}
    assert [f.name for f in FAMILIES if f not in used] == []
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_each_family_keeps_its_reference_speed_and_timing_method(family: str) -> None:
    level = next(lv for fam, lv in RELEASE.values() if fam == family)
    fam = family_for("release", family, level)
    assert (fam.name, fam.reference, fam.speed) == EXPECTED[family]
    assert fam.timed == (fam.speed != "none")
    # the nvcc-built harnesses whose main returns the verdict carry a harness proof (judge/harness_proof.py)
    assert fam.harness_proof == (family in {"cuda", "cublas", "cufft", "cusolver", "cusparse"})
    # Family.speed picks the timing method (timing/registry.py): every speed but ``interleaved`` (which picks
    # by the task: the timing contract or CUPTI) names its method there
    assert fam.speed == "interleaved" or fam.speed in SPEED_METHODS


def test_the_real_instances_are_built_judged_and_timed_by_their_family() -> None:
    """On the real release instances of tests/data/release_real: the family's decisions, as the engine asks them."""
    tasks = {t.family: t for t in load_corpus(DATA / "release_real").tasks}
    kb, cutlass, cudabench = tasks["kernelbench"], tasks["cutlass"], tasks["cudabench"]
    assert default_method(kb) == "torch_events_l2flush_interleaved"
    assert default_method(cutlass) == default_method(tasks["flashattention"]) == "testbench_lines"
    assert default_method(cudabench) is None and default_method(tasks["cuda"]) == "cupti"
    # kernelbench: the eager Model is the reference submission, built without the static checker
    ref = families.reference_submission(kb)
    assert ref is not None and ref.rstrip().endswith(families.KERNELBENCH_ALIAS)
    assert (
        families.is_reference_submission(kb, ref) and "ast.parse" in families.for_code(kb, ref).build_command
    )
    assert families.sanitizer_scope_rule(kb) == families.KERNELBENCH_SANITIZER_SCOPE
    assert families.sanitizer_scope_rule(tasks["cuda"]) is None
    # cutlass and cudabench have no reference a model could submit; cudabench's verdict is its T/F line
    assert families.reference_submission(cutlass) is None and families.reference_submission(cudabench) is None
    assert families.oracle_failure(cudabench, 0, "T\n") is None
    assert (
        families.oracle_failure(cudabench, 0, "F\n")
        == "compare_output: F (output differs from the reference output)"
    )
    assert families.oracle_failure(tasks["cuda"], 0, "F\n") is None
    # the applied runner makes the build and test commands; its builds are bound to their work dir
    applied = tasks["flashattention"]
    assert families.build_is_path_bound(applied) and not families.build_is_path_bound(tasks["cuda"])


def test_a_family_the_release_adds_is_drop_in_or_applied_by_its_level() -> None:
    new = family_for("release", "NewLib", "curated_cuda_pool")
    assert (new.name, new.reference, new.speed) == ("newlib", "drop_in", "interleaved")
    applied = family_for("release", "newlib", families.APPLIED_LEVEL)
    assert (applied.name, applied.reference, applied.speed) == ("newlib", "applied_runner", "testbench_lines")
    # a drop-in family of the applied level, or an applied one of another level, is decided by the level
    assert family_for("release", "cuda", families.APPLIED_LEVEL).reference == "applied_runner"
    assert family_for("release", "layernorm", "curated_cuda_pool").reference == "drop_in"


def _about_family(node: ast.AST) -> bool:
    """Whether an expression reads a task's family or level (``task.family``, ``inp.level``, ``family``...)."""
    return any(w in ast.unparse(node).lower() for w in ("family", "families", "level"))


def test_no_module_outside_the_families_decides_by_a_family_name() -> None:
    """No module outside engine/corpus/families/ compares a task's family or level with a family name of the
    release (or the applied level), nor tests whether it starts with one: that would be a family decided
    outside its object."""
    names = set(EXPECTED) | {"applied_kernels_class"}
    pkg = ROOT / "beavertui"
    found = []
    for path in sorted(pkg.rglob("*.py")):
        if path.parent == pkg / "engine" / "corpus" / "families":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                sides = (node.left, *node.comparators)
                consts = [c for c in sides if isinstance(c, ast.Constant)]
                named = any(isinstance(c.value, str) and c.value.lower() in names for c in consts)
                if named and any(_about_family(s) for s in sides if not isinstance(s, ast.Constant)):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("startswith", "endswith")
                and any(isinstance(a, ast.Constant) and a.value in names for a in node.args)
                and _about_family(node.func.value)
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
