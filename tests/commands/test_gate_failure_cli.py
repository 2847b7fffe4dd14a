"""The command line's plain text shows a session that failed the speed gate as a failure: `live`'s
headless end line, `replay` piped, and `browse` in every format. The session is a real one
(tests/gate_session.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beavertui.cli import main
from tests.gate_session import LIVE, RECORDED


def test_live_replay_and_browse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    assert main([*LIVE, "--toolchain", RECORDED, "--out", str(out), "--headless"]) in (0, 1)
    said = capsys.readouterr().out
    end = next(ln for ln in said.splitlines() if ln.startswith("end "))
    assert end.startswith("end failed gate after 2 iterations, no success, best 0.02x")

    assert main(["replay", str(out)]) == 0
    ended = capsys.readouterr().out.splitlines()[-1]
    assert ended == "  ended: failed gate after 2, best 0.02x < gate 0.70x"

    assert main(["browse", str(tmp_path), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["outcome"], row["stop"], row["below_gate"]) == ("failed", "failed gate", True)
    assert main(["browse", str(tmp_path), "--format", "md"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "vec_scale" in ln]
    assert "| failed gate |" in line and "passed" not in line
