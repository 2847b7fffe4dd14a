"""A batch over the release on a fresh machine (no stored verdicts, no validation run first).

tests/data/release_fresh (made by its make_release_fresh.py): ten usable nvcc-family instances with their
sessions as recorded on the H200, and cuda_117, whose reference fails there (its outcome composed from its
H200 validation record). scripted:@alternate submits the broken start, then the reference submission: the
reference should pass every usable task, so pass@k over the tasks a batch scores must be 100%. Before the
package shipped the release's H200 verdicts, such a batch scored cuda_117's failing reference as the model's
failure: 10 of 11, 90.9%.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.corpus import verdicts
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.toolchain.base import Toolchain
from beavertui.engine.validation import on_the_run
from tests.conftest import metrics_json

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "tests" / "data" / "release_fresh" / "release_fresh.tar.gz"
PROTOCOL = ROOT / "scripts" / "release-alternate.toml"
FAILING = "cuda_117__memory_crash__c2f7ebb0"
H200 = "nvidia_h200_sm_90_cuda_13_0"
H100 = "nvidia_h100_80gb_hbm3_sm_90_cuda_13_0"


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The release part and its recordings unpacked, and an empty cache: a machine that validated nothing."""
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(tmp_path / "release", filter="data")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def _batch(root: Path, *extra: str) -> Path:
    argv = [
        "batch", "--protocol", str(PROTOCOL), "--corpus", str(root / "release"),
        "--toolchain", f"recorded:{root / 'release' / 'sessions'}", "--sessions-dir", str(root / "runs"),
        "--run-id", "fresh", "--quiet", "--no-cache", *extra,
    ]  # fmt: skip
    assert main(argv) == 0
    return root / "runs" / "fresh"


def _as_gpu(root: Path, slug: str, name: str) -> None:
    """The recorded outcomes replayed as another GPU's: its signature in every session's header."""
    for path in (root / "release" / "sessions").glob("*.jsonl"):
        lines = path.read_text().splitlines()
        head = json.loads(lines[0])
        head["gpu"] = {**head["gpu"], "slug": slug, "name": name}
        path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")


def _pass_at_k(doc: dict[str, object]) -> tuple[float, int]:
    (group,) = doc["groups"]  # type: ignore[misc]
    return group["pass@k"], group["n_tasks"]


def test_the_known_set_holds_for_the_release_as_shipped(fresh: Path) -> None:
    tasks = {t.id: t for t in load_corpus(fresh / "release").tasks}
    found = {tid: verdicts.load(t, H200, fresh / "cache") for tid, t in tasks.items()}
    assert all(rec is not None and rec.known for rec in found.values())
    assert found[FAILING].verdict == "unusable"  # type: ignore[union-attr]
    assert found[FAILING].reason.startswith("the reference fails here: illegal_memory_access")  # type: ignore[union-attr]
    assert {tid for tid, rec in found.items() if rec.verdict != "unusable"} == set(tasks) - {FAILING}  # type: ignore[union-attr]
    # the reference's run on the H200 as the release batch recorded it (cuda_59: 0.28 s)
    assert found["cuda_59__logic_error__501f0dd2"].reference_run_s == pytest.approx(0.2797, abs=0.01)  # type: ignore[union-attr]
    # a machine's own record wins over the known set, and validation never reads the known set
    assert verdicts.load(tasks[FAILING], H200, fresh / "cache", known=False) is None


def test_a_fresh_batch_leaves_the_failing_reference_out(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _batch(fresh)
    err = capsys.readouterr().err
    assert f"{FAILING}: unusable on {H200} (the package's known verdicts): the reference fails here" in err
    manifest = json.loads((run / "run.json").read_text())
    assert FAILING not in manifest["tasks"] and len(manifest["tasks"]) == 10
    doc, _ = metrics_json(run, capsys)
    assert _pass_at_k(doc) == (1.0, 10)


def test_running_it_anyway_scores_the_failing_reference_as_the_models_failure(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a fresh machine did before the known set (and what --all-tasks asks for): 10 of 11."""
    run = _batch(fresh, "--all-tasks")
    capsys.readouterr()
    doc, _ = metrics_json(run, capsys)
    value, tasks = _pass_at_k(doc)
    assert tasks == 11 and round(100 * value, 1) == 90.9


def test_on_a_gpu_with_no_known_verdicts_the_batch_validates_what_it_runs(
    fresh: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same outcomes replayed as another GPU's, of which the package knows nothing: the batch runs all
    eleven, and the first session of each task checks its reference once (the broken start was checked before
    the first turn anyway). cuda_117's session ends unusable before its first turn, with the reason, and
    metrics leaves it out of every rate and says so."""
    _as_gpu(fresh, "nvidia_a100_sxm4_80gb_sm_80_cuda_13_0", "NVIDIA A100-SXM4-80GB")
    run = _batch(fresh, "--samples", "2")
    err = capsys.readouterr().err
    assert "skipped" not in err  # nothing is known up front
    manifest = json.loads((run / "run.json").read_text())
    assert len(manifest["tasks"]) == 11
    from beavertui.engine.session.events import SessionEnd
    from beavertui.engine.session.store import read_session

    ends = {}
    for path in run.rglob("*__s*.jsonl"):
        header, events, _ = read_session(path)
        assert header is not None
        ends[(header.task.id, header.sample)] = events[-1]
    assert len(ends) == 22
    for sample in (0, 1):
        end = ends[(FAILING, sample)]
        assert isinstance(end, SessionEnd) and end.stop_reason == "unusable" and end.iterations == 0
        assert end.detail is not None and end.detail.startswith(
            "the reference fails here: illegal_memory_access"
        )
    assert all(e.stop_reason == "passed" for (t, _), e in ends.items() if t != FAILING)  # type: ignore[union-attr]
    doc, said = metrics_json(run, capsys)
    assert _pass_at_k(doc) == (1.0, 10)
    assert doc["unusable_sessions"] == 2 and list(doc["unusable_tasks"]) == [FAILING]
    assert "2 session(s) of 1 task(s) found unusable on their GPU" in said


def test_on_an_h100_the_partial_known_set_holds_and_the_rest_is_validated_on_the_run(
    fresh: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package's H100 set holds what one release batch on an H100 checked (64 tasks): nine of the eleven
    here, cuda_117 among them as unusable. A batch on an H100 skips cuda_117 up front, runs the eight others
    without checking them again, and validates on the run the two the set lacks (cuda_59, cusparse_4): its
    check runs their references, and no other's."""
    known = verdicts.known_set(H100)
    assert len(known) == 64 and all(rec.gpu == H100 and rec.known for rec in known.values())
    assert sum(rec.verdict == "unusable" for rec in known.values()) == 7
    tasks = {t.id: t for t in load_corpus(fresh / "release").tasks}
    found = {tid: verdicts.load(t, H100, fresh / "cache") for tid, t in tasks.items()}
    missing = {"cuda_59__logic_error__501f0dd2", "cusparse_4__compile_error__cfcd99f6"}
    assert {tid for tid, rec in found.items() if rec is None} == missing
    assert found[FAILING].verdict == "unusable"  # type: ignore[union-attr]
    assert found[FAILING].reason.startswith("the reference fails here: illegal_memory_access")  # type: ignore[union-attr]
    # the reference's run as the H100 batch's own check measured it (cuda_110: 1.01 s there, 0.49 s on the H200)
    assert found["cuda_110__logic_error__957be815"].reference_run_s == pytest.approx(1.0079)  # type: ignore[union-attr]
    _as_gpu(fresh, H100, "NVIDIA H100 80GB HBM3")
    checks: list[on_the_run.UsableCheck] = []
    made = on_the_run.UsableCheck.__init__

    def keep(self: on_the_run.UsableCheck, toolchain: Toolchain) -> None:
        made(self, toolchain)
        checks.append(self)

    monkeypatch.setattr(on_the_run.UsableCheck, "__init__", keep)
    run = _batch(fresh)
    err = capsys.readouterr().err
    assert f"{FAILING}: unusable on {H100} (the package's known verdicts): the reference fails here" in err
    assert f"2 task(s) have no stored verdict for {H100}, whose recorded outcomes this replay reads" in err
    manifest = json.loads((run / "run.json").read_text())
    assert FAILING not in manifest["tasks"] and len(manifest["tasks"]) == 10
    # the batch's check ran the references of the two tasks the set lacks, once each, and of no other
    assert sorted(t for check in checks for t in check.checked) == sorted(missing)
    doc, _ = metrics_json(run, capsys)
    assert _pass_at_k(doc) == (1.0, 10)
