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
