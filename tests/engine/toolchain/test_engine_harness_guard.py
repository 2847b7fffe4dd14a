"""The harness in a work dir: read-only sources, hashed before and after, the corpus itself watched,
and solution paths that cannot leave the work dir (loader and runner)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.errors import BeaverError
from beavertui.engine.host import isolation, sandbox
from beavertui.engine.stage import stages

DATA = Path(__file__).parents[2] / "data"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(DATA / "native", root)
    return root


def test_harness_sources_are_read_only_and_shipped_binaries_are_not(tmp_path: Path) -> None:
    task = load_corpus(DATA / "release").get("cutlass_905_basic_gemm__perf_broken__a0000005")
    cfg = stages.StageConfig(base_dir=tmp_path)
    with stages.workdir(task, "// candidate\n", cfg) as work:
        modes = {rel: (work.path / rel).stat().st_mode & 0o222 for rel in work.manifest}
        sources = sorted(rel for rel in modes if stages.is_tamper_target(rel))
        assert "Makefile" in sources
        assert {modes[rel] for rel in sources} == {0}
        assert modes["test"] != 0  # a shipped binary the build replaces stays writable
        assert (work.path / task.solution_file).stat().st_mode & 0o200


def test_unprivileged_candidate_cannot_edit_a_harness_source(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores file modes; the hash check catches the edit (test_harness_tamper_detected)")
    task = load_corpus(DATA / "native").get("vec_scale")
    # no user namespace: there the stage is uid 0 with capabilities, which override file modes
    cfg = stages.StageConfig(base_dir=tmp_path, limits=sandbox.Limits(user_namespace=False))
    with stages.workdir(task, "// c\n", cfg) as work:
        out = stages.run_stage(work, "run", "echo '// hacked' >> test_main.cu", 10, cfg)
        assert out.rc == 1 and "Permission denied" in out.log
        assert work.verify() == []


def test_corpus_edited_through_an_absolute_path_is_caught(corpus: Path, tmp_path: Path) -> None:
    task = load_corpus(corpus).get("vec_scale")
    target = corpus / "vec_scale" / "testbench" / "test_main.cu"
    before = target.read_bytes()
    # no mount namespace: neither a private /tmp nor read-only binds, so only the hash check stands
    bare = sandbox.Limits(private_tmp=False, pid_namespace=False)
    cfg = stages.StageConfig(base_dir=tmp_path / "work", limits=bare)
    with stages.workdir(task, "// c\n", cfg) as work:
        assert work.verify() == []
        out = stages.run_stage(work, "run", f"echo '// poisoned' >> {target}", 10, cfg)
        assert out.rc == 0
        assert work.verify() == [stages.CORPUS_CHANGED]
    assert target.read_bytes() == before + b"// poisoned\n"


def test_corpus_and_cache_are_read_only_to_a_stage(corpus: Path, tmp_path: Path) -> None:
    plan = isolation.plan_for(True, False, True)
    if not plan.mount:
        pytest.skip(f"no mount namespace here: {plan.missing}")
    task = load_corpus(corpus).get("vec_scale")
    target = corpus / "vec_scale" / "testbench" / "test_main.cu"
    before = target.read_bytes()
    cache = tmp_path / "cache"
    (cache / "refbuild").mkdir(parents=True)
    (cache / "baseline.json").write_text("{}")
    # the corpus and cache copies lie under /tmp: a shared /tmp keeps them in sight of the stage
    cfg = stages.StageConfig(
        base_dir=tmp_path / "work", limits=sandbox.Limits(private_tmp=False), read_only=(cache,)
    )
    attack = (
        f"echo '// poisoned' >> {target}; echo rc=$?; "
        f"echo '{{\"ms\": 0}}' > {cache}/baseline.json; echo rc=$?; "
        f"touch {cache}/refbuild/x; echo rc=$?; "
        "echo ok > mine.txt; echo rc=$?\n"
    )
    with stages.workdir(task, "// c\n", cfg) as work:
        (work.path / "attack.sh").write_text(attack)
        out = stages.run_stage(work, "run", "sh attack.sh", 10, cfg)
        assert out.log.count("Read-only file system") == 3, out.log
        rcs = [line for line in out.log.splitlines() if line.startswith("rc=")]
        assert len(rcs) == 4 and "rc=0" not in rcs[:3] and rcs[3] == "rc=0", out.log
        assert (work.path / "mine.txt").read_text() == "ok\n"
        assert work.verify() == []
    assert target.read_bytes() == before
    assert (cache / "baseline.json").read_text() == "{}" and not (cache / "refbuild" / "x").exists()


def test_a_stage_inside_a_read_only_folder_still_writes_its_own_work_dir(tmp_path: Path) -> None:
    """The reference build runs in beavertui's cache, which is read-only to stages."""
    plan = isolation.plan_for(True, False, True)
    if not plan.mount:
        pytest.skip(f"no mount namespace here: {plan.missing}")
    cache = tmp_path / "cache"
    work = cache / "refbuild" / "task"
    work.mkdir(parents=True)
    out = sandbox.run(
        "echo ok > built.txt && touch ../sibling",
        work,
        dict(os.environ),
        10.0,
        sandbox.Limits(private_tmp=False),
        read_only=(str(cache),),
    )
    assert (work / "built.txt").read_text() == "ok\n"
    assert out.rc == 1 and "Read-only file system" in out.log
    assert not (cache / "refbuild" / "sibling").exists()


def test_private_tmp_keeps_a_corpus_under_tmp_out_of_reach(corpus: Path, tmp_path: Path) -> None:
    plan = isolation.plan_for(True, True, True)
    if not plan.private_tmp:
        pytest.skip(f"no private /tmp here: {plan.missing}")
    assert str(corpus).startswith("/tmp/")
    task = load_corpus(corpus).get("vec_scale")
    target = corpus / "vec_scale" / "testbench" / "test_main.cu"
    before = target.read_bytes()
    cfg = stages.StageConfig(base_dir=tmp_path / "work")
    with stages.workdir(task, "// c\n", cfg) as work:
        # the candidate's own code names the path (paths in the task's command stay reachable)
        (work.path / "attack.sh").write_text(f"mkdir -p {target.parent} && echo '// poisoned' >> {target}\n")
        out = stages.run_stage(work, "run", "sh attack.sh", 10, cfg)
        assert out.rc == 0
        assert work.verify() == []
    assert target.read_bytes() == before


@pytest.mark.parametrize(
    ("solution_file", "expected"),
    [
        ("/etc/evil.cu", "must be relative and non-empty"),
        ("../../evil.cu", "escapes the task folder"),
        ("include/../../reference.cu", "escapes the task folder"),
        ("link_out.cu", "escapes the task folder"),  # a symlink inside the task folder, outside testbench
    ],
)
def test_loader_refuses_solution_paths_that_escape(corpus: Path, solution_file: str, expected: str) -> None:
    task_dir = corpus / "vec_scale"
    (task_dir / "testbench" / "link_out.cu").symlink_to("../reference.cu")
    data = json.loads((task_dir / "input.json").read_text())
    data["solution_file"] = solution_file
    (task_dir / "input.json").write_text(json.dumps(data))
    load = load_corpus(corpus)
    assert [t.id for t in load.tasks] == ["spin"]
    assert len(load.problems) == 1 and expected in load.problems[0], load.problems


def test_runner_refuses_a_solution_path_through_a_linked_library(tmp_path: Path) -> None:
    task = load_corpus(DATA / "release").get("cutlass_905_basic_gemm__perf_broken__a0000005")
    bad = dataclasses.replace(task, solution_file="reference_sources/cutlass/evil.cu")
    with pytest.raises(BeaverError, match="escapes the work dir"):
        stages.prepare(bad, "// c\n", tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_a_library_linked_from_a_read_only_corpus_under_tmp_stays_visible(tmp_path: Path) -> None:
    """The release under /tmp: its data/ folder is read-only to a stage, and the CUTLASS headers a work dir
    links from data/_external must still be there (a plain bind of data/ onto itself hid them: every
    cutlass build failed with "cutlass.h: No such file or directory")."""
    plan = isolation.plan_for(True, True, True)
    if not (plan.mount and plan.private_tmp):
        pytest.skip(f"no private /tmp here: {plan.missing}")
    assert str(tmp_path).startswith("/tmp/")
    data = tmp_path / "release" / "data"
    lib = data / "_external" / "cutlass" / "include"
    lib.mkdir(parents=True)
    (lib / "cutlass.h").write_text("// header\n")
    work = tmp_path / "work"
    (work / "reference_sources").mkdir(parents=True)
    (work / "reference_sources" / "cutlass").symlink_to(data / "_external" / "cutlass")
    out = sandbox.run(
        "cat reference_sources/cutlass/include/cutlass.h && touch ok; touch "
        + str(data / "x")
        + "; touch reference_sources/cutlass/include/x",
        work,
        dict(os.environ),
        10.0,
        read_only=(str(data),),
        keep=(str(data / "_external" / "cutlass"),),
    )
    assert out.log.startswith("// header\n") and (work / "ok").exists()
    # the library is read-only; the rest of the corpus stays out of sight (a write lands in the private tmp)
    assert "Read-only file system" in out.log and not (lib / "x").exists() and not (data / "x").exists()
