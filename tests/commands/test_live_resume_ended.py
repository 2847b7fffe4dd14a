"""``live --resume`` goes on with a session that an endpoint failure ended or the user stopped: the end and
the failure are dropped, the cut attempt is asked again, and the file reads as one session. Before, both
were refused ("the session already ended (error)", exit 2), though exit status 3 and 130 say to fix the
cause and go on. The endpoint is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine import bundled
from beavertui.engine.session.store import load_session
from tests.engine.models.test_models_openai import ChatServer

ROOT = Path(__file__).resolve().parents[2]


def _clean_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))


def _repair() -> str:
    """The demo reply whose candidate the H200 recorded as a repair of transpose_00."""
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    return str(doc["reply"][2]["content"])


def _kinds(path: Path) -> list[str]:
    return [json.loads(line)["kind"] for line in path.read_text().splitlines()]


def test_a_session_ended_by_its_endpoint_goes_on_with_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    out = tmp_path / "s.jsonl"
    with ChatServer([("500", None), ("ok", _repair())], models=["m"]) as server:
        rc = main(["live", "--task", "transpose_00", "--model", "m", "--base-url", server.url, "--no-stream",
                   "--retries", "0", "--toolchain", "demo", "--headless", "--out", str(out)])  # fmt: skip
        err = capsys.readouterr().err
        assert rc == 3, err
        # the way on names the replay it ran on: the session file does not keep it, and without it a resume
        # on a machine without a GPU stops at "no NVIDIA GPU"
        assert err.splitlines()[-1] == (
            f"beavertui: to go on from here: beavertui live --resume {out} --toolchain demo"
        )
        assert _kinds(out)[-2:] == ["infra_error", "end"]
        # what is asked is the session's: a decoding flag is refused; where and how a call goes may change
        assert (
            main(["live", "--resume", str(out), "--top-p", "0.5", "--toolchain", "demo", "--headless"]) == 2
        )
        (line,) = capsys.readouterr().err.splitlines()
        assert line == (
            f"beavertui: --resume continues {out}: --top-p would change what model m is asked (the session has "
            "None); drop --top-p"
        )
        rc = main(["live", "--resume", str(out), "--timeout", "30", "--toolchain", "demo", "--headless"])
        err = capsys.readouterr().err
        assert len(server.requests) == 2
    assert rc == 0, err
    assert "beavertui: the session had ended (error: HTTP 500" in err
    _header, events = load_session(out)
    kinds = [e.kind for e in events]
    assert kinds.count("end") == 1 and "infra_error" not in kinds
    end = events[-1]
    assert end.kind == "end" and end.success and end.iterations == 1  # type: ignore[union-attr]


def test_a_stopped_session_goes_on_and_a_finished_one_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    out = tmp_path / "s.jsonl"
    # a finished session (the demo's repair, three iterations) is not run again
    assert main(["live", "--demo", "--headless", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["live", "--resume", str(out), "--model", "scripted:" + str(bundled.demo_replies("repair_in_three")),
                 "--toolchain", "demo", "--headless"]) == 2  # fmt: skip
    assert "the session already ended (passed)" in capsys.readouterr().err
    # the same file cut after its second verdict and ended as a stop from the screen: it goes on from there
    lines = out.read_text().splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if json.loads(line)["kind"] == "verdict"][1]
    end = json.loads(lines[-1])
    end.update(stop_reason="stopped", iterations=2, success=False, best_speedup=None, detail="stopped")
    out.write_text("".join(lines[: second + 1]) + "\n" + json.dumps(end) + "\n")
    rc = main(["live", "--resume", str(out), "--model", "scripted:" + str(bundled.demo_replies("repair_in_three")),
               "--toolchain", "demo", "--headless"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "the session had ended (stopped: stopped); its cut attempt is redone" in err
    _header, events = load_session(out)
    assert [e.iteration for e in events if e.kind == "verdict"] == [1, 2, 3]  # type: ignore[attr-defined]
    assert events[-1].kind == "end" and events[-1].success  # type: ignore[union-attr]


def test_the_live_screen_left_after_an_endpoint_failure_says_how_to_go_on(tmp_path: Path) -> None:
    """On a real terminal the session screen shows the end; once it is closed (q), the terminal keeps one line
    with the resume command, as a headless run prints it."""
    out = tmp_path / "s.jsonl"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS")
    }
    env.update(HOME=str(tmp_path), TERM="xterm", COLUMNS="120", LINES="40", PYTHONPATH=str(ROOT))
    with ChatServer([("500", None)], models=["m"]) as server:
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "beavertui", "live", "--task", "transpose_00", "--model", "m", "--base-url",
             server.url, "--no-stream", "--retries", "0", "--toolchain", "demo", "--out", str(out)],
            stdin=slave, stdout=slave, stderr=slave, env=env, cwd=tmp_path,
        )  # fmt: skip
        os.close(slave)
        screen = b""
        deadline = time.monotonic() + 90
        pressed = False
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                with contextlib.suppress(OSError):
                    screen += os.read(master, 65536)
            if not pressed and out.is_file() and _kinds(out)[-1:] == ["end"]:
                os.write(master, b"q")
                pressed = True
        with contextlib.suppress(OSError):
            while chunk := os.read(master, 65536):
                screen += chunk
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert pressed and proc.wait() == 3
    assert f"beavertui: to go on from here: beavertui live --resume {out}".encode() in screen
