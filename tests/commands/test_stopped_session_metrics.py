"""A live session stopped before its loop was over (Ctrl-C, or x on the screen) ends with stop reason
``stopped`` and goes on with ``live --resume``; metrics scored it as a trajectory that never succeeded. The
endpoint is a real HTTP server on 127.0.0.1 that answers the first request and hangs on the second, and the
session is a real ``beavertui live --headless`` process sent SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine import bundled
from tests.engine.models.test_endpoint_faults import FaultServer

ROOT = Path(__file__).resolve().parents[2]


def test_a_session_stopped_by_ctrl_c_is_in_no_rate_until_it_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    wrong = str(doc["reply"][0]["content"])  # a candidate the H200 recorded as a wrong result
    with FaultServer({"local": [("ok", wrong), ("hang", 120.0)]}) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "beavertui", "live", "--task", "transpose_00", "--model", "local",
             "--base-url", server.url, "--no-stream", "--toolchain", "demo", "--headless",
             "--sessions-dir", str(tmp_path / "s")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
            env={**{k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "BEAVERTUI_MODELS")},
                 "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while server.counts["local"] < 2:  # the first attempt judged, the second request waiting
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    (path,) = (tmp_path / "s").rglob("*.jsonl")
    end = json.loads(path.read_text().splitlines()[-1])
    assert (end["kind"], end["stop_reason"], end["iterations"]) == ("end", "stopped", 1), end
    assert f"beavertui live --resume {path}" in err
    # metrics: no rate counts it, and it says why and how to go on; asked for, it is scored as it stands
    assert main(["metrics", str(tmp_path / "s")]) == 2
    assert (
        "no session has run its loop to the end (1 stopped before it was over; go on with beavertui live "
        f"--resume {path} (and the --toolchain it ran on, where a replay), or score them as they stand with "
        "--include-unfinished)"
    ) in capsys.readouterr().err
    assert main(["metrics", str(tmp_path / "s"), "--json", "--include-unfinished"]) == 0
    got = json.loads(capsys.readouterr().out)
    (row,) = got["paper_tables"]["table1"]
    assert (row["n_tasks"], row["pass@k"], row["never_succeeded"]) == (1, 0.0, 1)
    assert (got["stopped_sessions"], got["final"]) == (1, False)
