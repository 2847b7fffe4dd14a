"""`beavertui check` says how long each stage took, the sanitizer run included."""

from __future__ import annotations

import pytest

from beavertui.commands.check import _show
from beavertui.engine.session.events import Sanitized, StageResult


def _sanitized(duration: float, timed_out: bool) -> Sanitized:
    res = StageResult(
        stage="sanitize",
        command="compute-sanitizer ./t",
        rc=None if timed_out else 1,
        timed_out=timed_out,
        duration_s=duration,
        log="",
    )
    return Sanitized(iteration=1, tool="memcheck", result=res, error_count=None if timed_out else 2)


def test_a_sanitizer_run_says_how_long_it_took(capsys: pytest.CaptureFixture[str]) -> None:
    _show(_sanitized(8.25, timed_out=False))
    assert capsys.readouterr().out.strip() == "sanitize: memcheck: 2 errors, 0 records in 8.25 s"


def test_a_sanitizer_run_that_hit_its_limit_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    _show(_sanitized(300.04, timed_out=True))
    assert (
        capsys.readouterr().out.strip() == "sanitize: memcheck: no summary, 0 records in 300.04 s (timed out)"
    )


def test_check_json_prints_session_events(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check --json` (README) prints each stage's event and the verdict as JSON lines that read back as the
    events of a session file (the same event union, docs/format.md)."""
    import json

    from beavertui.cli import main
    from beavertui.engine.session.events import EVENT_ADAPTER, Built, Ran, Verdict
    from beavertui.engine.toolchain import local, resolve

    class Stages:
        def __init__(self, *_: object) -> None:
            self.last_workdir = None

        def attempt(self, task: object, code: str, options: object) -> object:
            ok = StageResult(stage="build", command="nvcc", rc=0, duration_s=1.5, log="")
            yield Built(iteration=1, result=ok)
            yield Ran(iteration=1, result=ok.model_copy(update={"stage": "run", "command": "./t"}))
            yield Verdict(
                iteration=1,
                category="passed",
                signature=None,
                correct=True,
                speedup=1.2,
                gate=0.7,
                success=True,
                reason="ok",
            )

    monkeypatch.setattr(resolve, "require_gpu", lambda task: None)  # no GPU needed: the stages are stand-ins
    monkeypatch.setattr(local, "LocalToolchain", Stages)
    assert main(["check", "transpose_00", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    events = [EVENT_ADAPTER.validate_python(json.loads(line)) for line in lines]
    assert [e.kind for e in events] == ["build", "run", "verdict"]
    assert isinstance(events[-1], Verdict) and events[-1].speedup == 1.2
