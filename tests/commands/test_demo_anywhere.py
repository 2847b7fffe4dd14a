"""``--demo`` and the bundled demo paths, from a folder outside the checkout with no key and no GPU: each demo
runs again on its recorded outcomes to the verdicts it recorded, ``batch --demo`` runs every demo task and
``metrics`` reads the run, and ``demo:NAME`` or a README path under ``sessions/demo/`` finds the bundled
sessions. (tests/test_installed_wheel.py runs the same from an installed wheel.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine import bundled
from beavertui.engine.session.events import SessionEnd, Verdict
from beavertui.engine.session.store import read_session


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _verdicts(path: Path) -> tuple[list[tuple[str, bool]], SessionEnd | None]:
    _header, events, problem = read_session(path)
    assert problem is None
    ends = [e for e in events if isinstance(e, SessionEnd)]
    return [(e.category, e.success) for e in events if isinstance(e, Verdict)], (ends[0] if ends else None)


@pytest.mark.parametrize("name", bundled.demo_names())
def test_each_demo_runs_again_to_its_recorded_verdicts(
    elsewhere: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    rc = main(["live", "--demo", name, "--headless"])
    err = capsys.readouterr().err
    (written,) = (elsewhere / "sessions" / "live").glob("*.jsonl")
    assert f"session written to sessions/live/{written.name}" in err
    again, end = _verdicts(written)
    recorded, recorded_end = _verdicts(bundled.demo_sessions() / f"{name}.jsonl")
    assert again == recorded and end is not None and recorded_end is not None
    assert (end.stop_reason, end.success) == (recorded_end.stop_reason, recorded_end.success)
    assert rc == (0 if end.success else 1)
    header, _events, _problem = read_session(written)
    assert header is not None and header.notes is not None and "nothing built or run" in header.notes


def test_batch_demo_runs_every_demo_task_and_metrics_reads_it(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", "--demo", "--run-id", "d", "--quiet"]) == 0
    err = capsys.readouterr().err
    tasks = bundled.demo_tasks()
    assert len(tasks) == 5 and f"{len(tasks)}/{len(tasks)} sessions (0 already done)" in err
    files = sorted((elsewhere / "sessions" / "d").rglob("*__s0.jsonl"))
    assert sorted(f.name.split("__")[0] for f in files) == tasks
    assert all(_verdicts(f)[1] is not None for f in files)
    assert main(["metrics", "sessions/d", "--format", "csv", "--table", "main"]) == 0
    assert "scripted:@demo" in capsys.readouterr().out


def test_bundled_demo_paths_resolve_from_any_folder(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not (elsewhere / "sessions").exists()
    assert main(["export", "demo:degenerate_repair", "--html", "-o", "d.html"]) == 0
    assert "softmax_00" in (elsewhere / "d.html").read_text(encoding="utf-8")
    assert main(["export", "sessions/demo/repair_in_three.jsonl", "--html", "-o", "r.html"]) == 0
    assert main(["replay", "demo:repair_in_three"]) == 0
    assert main(["compare", "demo:repair_in_three", "sessions/demo/typo_then_barrier.jsonl"]) == 0
    assert main(["metrics", "demo:", "--format", "csv", "--table", "main"]) == 0
    capsys.readouterr()
    # a path that is here is read as given, and a name that is nowhere is said as such
    (elsewhere / "sessions" / "demo").mkdir(parents=True)
    assert main(["export", "sessions/demo", "--html", "-o", "x.html"]) == 2
    assert "no session files found" in capsys.readouterr().err
    assert main(["replay", "demo:nothing"]) == 2


def test_the_second_transpose_session_serves_as_a_recording() -> None:
    """Every bundled session names its harness, so its outcomes can be replayed (the demo toolchain)."""
    from beavertui.engine.toolchain.recorded import recordings_from_sessions

    for path in sorted(bundled.demo_sessions().glob("*.jsonl")):
        header, _events, _problem = read_session(path)
        assert header is not None and header.task.harness_hash, path.name
        found, _gpu = recordings_from_sessions([path])
        assert found, path.name
    assert bundled.demo_of_task("transpose_00") == bundled.DEFAULT_DEMO
