"""The attempt runner on real nvcc (no GPU needed): work dirs, build-stage classification, tampering."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.judge.classify import classify
from beavertui.engine.stage import stages

DATA = Path(__file__).parents[2] / "data"
nvcc = pytest.mark.skipif(
    not any(Path(p, "nvcc").exists() for p in os.environ["PATH"].split(":")), reason="no nvcc"
)


@pytest.fixture(scope="module")
def vec_scale():
    return load_corpus(DATA / "native").get("vec_scale")


def _build(task, code: str, tmp_path: Path) -> tuple[stages.StageResult, list[str]]:
    cfg = stages.StageConfig(base_dir=tmp_path)
    with stages.workdir(task, code, cfg) as work:
        assert (work.path / "_common" / "fixture.cuh").is_file()
        assert (work.path / "solution.cu").read_text() == code
        result = stages.build(work, cfg)
        return result, work.note_build()


@nvcc
@pytest.mark.parametrize(
    ("code", "category", "signature"),
    [
        (
            "#include <cub_nope/x.cuh>\n",
            "environment_dependency",
            "solution.cu:#:#: fatal error: x.cuh: No such file or directory",
        ),
        (
            "void launch_scale(const float* in, float* out, double s, int n) {}\n",
            "integration",
            "undefined reference to `launch_scale(float const*, float*, float, int)'",
        ),
        (
            '#include "scale.h"\nextern "C" void launch_scale(const float* in, float* out, float s, int n) {}\n',
            "integration",
            'solution.cu(#): error: linkage specification is incompatible with previous "launch_scale" '
            "(declared at line # of scale.h)",
        ),
        (
            '#include "scale.h"\nvoid launch_scale(const float* in, float* out, float s, int n) { int x = }\n',
            "buildability",
            "solution.cu(#): error: expected an expression",
        ),
    ],
    ids=["missing_header", "undefined_reference", "declaration_mismatch", "syntax_error"],
)
def test_build_stage_categories_on_real_nvcc(
    vec_scale, tmp_path: Path, code: str, category: str, signature: str
) -> None:
    result, tampered = _build(vec_scale, code, tmp_path)
    assert result.stage == "build" and result.rc not in (0, None) and result.duration_s > 0
    c = classify(result.rc, result.log, None, "", result.timed_out)
    assert c.category == category, result.log
    assert c.signature == signature
    assert tampered == []
    assert list(tmp_path.iterdir()) == []  # work dir removed


@nvcc
def test_same_error_on_other_lines_gives_same_signature(vec_scale, tmp_path: Path) -> None:
    a = '#include "scale.h"\nvoid launch_scale(const float* in, float* out, float s, int n) { undeclared_thing(); }\n'
    b = '#include "scale.h"\n\n\n// moved down\n\nvoid launch_scale(const float* in, float* out, float s, int n) {\n  undeclared_thing();\n}\n'
    ra, _ = _build(vec_scale, a, tmp_path)
    rb, _ = _build(vec_scale, b, tmp_path)
    ca = classify(ra.rc, ra.log, None, "", False)
    cb = classify(rb.rc, rb.log, None, "", False)
    assert "(2)" in ra.log and "(7)" in rb.log
    assert ca.category == cb.category == "buildability"
    assert ca.signature == cb.signature == 'solution.cu(#): error: identifier "undeclared_thing" is undefined'


def test_harness_tamper_detected(vec_scale, tmp_path: Path) -> None:
    cfg = stages.StageConfig(base_dir=tmp_path)
    with stages.workdir(vec_scale, "// candidate\n", cfg, keep=True) as work:
        assert work.verify() == []
        out = stages.run_stage(
            work, "run", "echo '// hacked' >> test_main.cu; rm include/scale.h; touch new.o", 10, cfg
        )
        assert out.rc == 0
        assert work.verify() == ["include/scale.h", "test_main.cu"]
    assert work.path.is_dir()  # kept on request
    stages.remove(work)
    assert not work.path.exists()


def test_build_outputs_overwriting_shipped_binaries_are_not_tampering(tmp_path: Path) -> None:
    task = load_corpus(DATA / "release").get("cutlass_905_basic_gemm__perf_broken__a0000005")
    cfg = stages.StageConfig(base_dir=tmp_path)
    with stages.workdir(task, "// h\n", cfg) as work:
        assert (work.path / "reference_sources" / "cutlass").is_symlink()
        stages.run_stage(work, "build", "printf 'new binary' > test", 10, cfg)
        assert work.note_build() == []
        assert work.verify() == []
        stages.run_stage(work, "build", "echo x >> Makefile", 10, cfg)
        assert work.note_build() == ["Makefile"]
        assert work.verify() == ["Makefile"]


def test_stage_env_is_scrubbed_and_adapted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp")
    task = load_corpus(DATA / "release").get("kernelbench_level1_904__logic_error__a0000004")
    cfg = stages.StageConfig(base_dir=tmp_path, sm=90)
    with stages.workdir(task, "x = 1\n", cfg) as work:
        out = stages.run_stage(
            work, "run", "env; python -c 'import sys; print(\"EXE\", sys.executable)'", 20, cfg
        )
    assert "sk-secret" not in out.log and "GITHUB_TOKEN" not in out.log
    assert f"PYTHONPATH={DATA / 'release' / 'harness' / '_vendor'}" in out.log
    assert f"EXE {os.path.realpath(os.sys.executable)}" in out.log.replace(
        os.sys.executable, os.path.realpath(os.sys.executable)
    )
