"""The diff pane of an attempt whose reply the endpoint cut at its completion token limit says so and what
to raise, under "No code extracted"; the session is recorded by ``live`` from a real HTTP server on
127.0.0.1, then opened in the session screen under a Textual pilot."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine.session.store import read_session
from beavertui.tui.app import BeaverApp
from beavertui.tui.session_screen import SessionScreen
from tests.commands.test_token_limit_cut import _cut
from tests.loopback_endpoint import Endpoint
from tests.tui.conftest import SIZE, wait_for


def _session(tmp_path: Path, answer: object, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    out = tmp_path / "s.jsonl"
    with Endpoint(answer) as server:  # type: ignore[arg-type]
        main(["live", "--task", "transpose_00", "--model", "m", "--base-url", server.url, "--no-stream",
              "--budget", "1", "--toolchain", "demo", "--headless", "--out", str(out)])  # fmt: skip
    return out


async def _diff_text(session: Path) -> str:
    header, events, problem = read_session(session)
    assert header is not None
    app = BeaverApp(lambda: SessionScreen(header, events, problem=problem))
    async with app.run_test(size=SIZE) as pilot:
        pane = app.screen.query_one("#diff")
        await wait_for(pilot, lambda: "No code extracted" in pane.text)
        return str(pane.text)


async def test_the_diff_pane_says_the_token_limit_cut_the_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = await _diff_text(_session(tmp_path, _cut, monkeypatch))
    assert "No code extracted: the last code block is not closed" in text
    assert "The reply stopped at its completion token limit (finish reason length): set or raise" in text
    assert "--max-tokens N" in text


async def test_a_reply_without_code_for_another_reason_says_nothing_of_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_code(model: str, body: dict, headers: dict):  # type: ignore[no-untyped-def,type-arg]
        from tests.loopback_endpoint import completion

        return "json", completion(model, "I cannot fix this kernel.")

    text = await _diff_text(_session(tmp_path, no_code, monkeypatch))
    assert "No code extracted: no fenced code block" in text and "token limit" not in text
