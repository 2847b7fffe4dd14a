"""`beavertui batch --tui`: the dashboard runs a real batch (scripted model, recorded toolchain) to its end.

The batch is prepared exactly as the command prepares it (parser, options, prepare), then run under the
dashboard app; counts are checked against the session files the batch wrote.
"""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from beavertui.batch.rundir import read_manifest
from beavertui.cli import build_parser, main
from beavertui.commands.batch import options_of
from beavertui.engine.session.store import read_session
from beavertui.service.batch_prepare import prepare
from beavertui.tui.batch_dashboard import BatchDashboard, ConfirmStop, dashboard_app
from beavertui.tui.session_screen import SessionScreen
from tests.tui.conftest import SIZE, wait_for

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDED = f"recorded:{CORPUS / 'vec_scale.recordings.jsonl'}"


def prepared(tmp: Path, *extra: str, models: bool = True) -> tuple[Any, Path]:
    scripted = ["--models", "scripted:vec_scale_demo.toml"] if models else []
    args = build_parser().parse_args(
        [
            "batch",
            "--corpus",
            str(CORPUS),
            *scripted,
            "--toolchain",
            RECORDED,
            "--sessions-dir",
            str(tmp),
            "--run-id",
            "dash",
            "--tui",
            *extra,
        ]
    )
    options = options_of(args)
    run = prepare(options)
    app = dashboard_app(options, run)
    return app, run.run_dir


def ended(run_dir: Path) -> list[bool]:
    """Success of every finished session file."""
    out = []
    for path in sorted(run_dir.rglob("*.jsonl")):
        _header, events, _problem = read_session(path)
        if events and events[-1].kind == "end":
            out.append(bool(events[-1].success))  # type: ignore[attr-defined]
    return out


def text_of(widget: Any) -> str:
    con = Console(width=118, file=io.StringIO(), record=True)
    con.print(widget.content)
    return con.export_text()


async def test_dashboard_runs_a_sweep_to_its_end(tmp_path: Path) -> None:
    app, run_dir = prepared(tmp_path, "--protocol", "legacy-gate")
    async with app.run_test(size=SIZE) as pilot:
        dash = app.dashboard
        await wait_for(pilot, lambda: not dash.running, timeout=20)
        # at p = 1 (in the loop) the three-reply script runs out of replies: that session ends by an
        # infrastructure failure, with no verdict, so the batch's status is 3
        assert dash.error is None and dash.code == 3, dash.lines
        results = ended(run_dir)
        totals = dash.tracker.totals()
        assert totals["total"] == totals["done"] == len(results) == 4  # four gate values, one task
        assert totals["passed"] == sum(results)
        progress = text_of(dash.query_one("#batch-progress"))
        assert "finished" in progress and progress.count("1/1") == 4  # done per (model, protocol)
        assert f"sessions 4/4 (passed {sum(results)}" in progress
        assert any(ln.startswith("beavertui: 4/4 sessions") for ln in dash.lines)
        # the browser below lists the sessions the batch wrote; Enter opens one
        await wait_for(pilot, lambda: dash.query_one("#sessions").row_count == 4)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is dash)
        await pilot.press("q")  # the batch has ended: no question
        await pilot.pause()
    assert app.return_value == dash.code
    assert read_manifest(run_dir).status == "finished"


class GatedEndpoint:
    """A chat-completions server on 127.0.0.1 that answers one request per ``release()``: the reference
    kernel of vec_scale, so the recorded toolchain judges it. It holds a batch still at a known point."""

    def __init__(self, reply: str) -> None:
        self.gate = threading.Semaphore(0)
        self.requests = 0
        outer = self

        def chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
            obj = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "gated",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return b"data: " + json.dumps(obj).encode() + b"\n\n"

        data = chunk({"role": "assistant", "content": reply}) + chunk({}, "stop") + b"data: [DONE]\n\n"

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests += 1
                outer.gate.acquire(timeout=30)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self.gate.release()

    def close(self) -> None:
        self.gate.release(100)
        self.server.shutdown()
        self.server.server_close()


async def test_quitting_asks_then_stops_and_resume_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beavertui.engine.corpus.load import load_corpus

    monkeypatch.setenv("GATED_TEST_KEY", "sk-gated")
    reference = load_corpus(CORPUS).get("vec_scale").reference()
    endpoint = GatedEndpoint(f"```cuda\n{reference}\n```")
    try:
        proto = tmp_path / "gated.toml"
        proto.write_text(
            'name = "gated"\nsamples = 3\n[protocol]\nbudget = 2\n\n[[models]]\nmodel = "gated"\n'
            f'base_url = "{endpoint.url}"\napi_key_env = "GATED_TEST_KEY"\n'
        )
        app, run_dir = prepared(tmp_path, "--protocol", str(proto), "--jobs", "1", models=False)
        async with app.run_test(size=SIZE) as pilot:
            dash = app.dashboard
            endpoint.release()  # the first session gets its reply and passes; the second one waits
            await wait_for(pilot, lambda: dash.tracker is not None and dash.tracker.totals()["done"] == 1)
            await wait_for(pilot, lambda: endpoint.requests == 2)
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmStop))
            await pilot.press("escape")  # keep running
            await wait_for(pilot, lambda: isinstance(app.screen, BatchDashboard))
            assert not dash.stop_event.is_set() and dash.running
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmStop))
            await pilot.press("s")
            await wait_for(pilot, lambda: dash.stop_event.is_set())
            dash.show_progress()
            assert "stopping: waiting for 1 sessions in flight" in text_of(dash.query_one("#batch-progress"))
            endpoint.release()  # the session in flight finishes; no new one starts
            await wait_for(pilot, lambda: not dash.running, timeout=20)
        totals = dash.tracker.totals()
        assert (totals["done"], totals["passed"], totals["total"]) == (2, 2, 3)
        assert endpoint.requests == 2 and app.return_value == 130
        assert any(f"continue with --resume {run_dir}" in ln for ln in dash.lines)
        assert read_manifest(run_dir).status == "interrupted" and len(ended(run_dir)) == 2
        endpoint.release(10)
        assert main(["batch", "--resume", str(run_dir), "--quiet"]) == 0
        assert ended(run_dir) == [True, True, True] and read_manifest(run_dir).summary["skipped"] == 2
    finally:
        endpoint.close()


def test_tui_needs_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "batch",
            "--corpus",
            str(CORPUS),
            "--models",
            "scripted:vec_scale_demo.toml",
            "--toolchain",
            RECORDED,
            "--sessions-dir",
            str(tmp_path),
            "--tui",
        ]
    )
    assert code == 2 and "--tui needs a terminal" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before any run folder was made


async def test_a_relative_run_folder_lists_each_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder watcher reports absolute paths and the folder walk the root as given: with a relative
    run folder each session was listed twice ("2 sessions · 4 shown")."""
    monkeypatch.chdir(tmp_path)
    app, run_dir = prepared(Path("runs"), "--samples", "2")
    assert not run_dir.is_absolute()
    async with app.run_test(size=SIZE) as pilot:
        dash = app.dashboard
        await wait_for(pilot, lambda: not dash.running, timeout=20)
        files = sorted(run_dir.rglob("*.jsonl"))
        assert len(files) == 2
        table = dash.query_one("#sessions")
        # the watcher has seen every file the batch wrote: it re-read the last one written after its end
        await wait_for(pilot, lambda: dash.total == 2 and table.row_count >= 2)
        seen: set[str] = set()
        watched = dash.upsert

        def spy(rows: list[Any], **kw: Any) -> None:
            seen.update(r.path for r in rows)
            watched(rows, **kw)

        dash.upsert = spy  # type: ignore[method-assign]
        for f in files:  # a change the watcher must report, as a running batch's writes are
            f.write_bytes(f.read_bytes())
        await wait_for(pilot, lambda: len(seen) == 2)
        assert sorted(table.keys) == sorted(str(f) for f in files)
        assert "2 sessions · 2 shown" in text_of(dash.query_one("#browser-status"))


async def test_the_stop_question_fits_a_small_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80x24 the question 'Stop it?' kept its 84 columns: its right border and the end of its lines
    were off the screen. It takes the screen's width there."""
    from textual.geometry import Region

    from beavertui.engine.corpus.load import load_corpus

    monkeypatch.setenv("GATED_TEST_KEY", "sk-gated")
    reference = load_corpus(CORPUS).get("vec_scale").reference()
    endpoint = GatedEndpoint(f"```cuda\n{reference}\n```")
    try:
        proto = tmp_path / "gated.toml"
        proto.write_text(
            'name = "gated"\nsamples = 2\n[protocol]\nbudget = 2\n\n[[models]]\nmodel = "gated"\n'
            f'base_url = "{endpoint.url}"\napi_key_env = "GATED_TEST_KEY"\n'
        )
        app, _run_dir = prepared(tmp_path, "--protocol", str(proto), "--jobs", "1", models=False)
        async with app.run_test(size=(80, 24)) as pilot:
            dash = app.dashboard
            await wait_for(pilot, lambda: endpoint.requests == 1)
            await wait_for(pilot, lambda: "Open" in app.screen._compositor.render_strips()[-1].text)
            footer = app.screen._compositor.render_strips()[-1].text
            assert footer.startswith(" ⏎ Open  x Stop batch "), footer  # was last, cut to "x Stop ba"
            from textual.binding import Binding

            from beavertui.tui.browser import BrowserScreen

            keys = set(app.screen.active_bindings)  # every key of the browser is still bound
            assert {b.key for b in BrowserScreen.BINDINGS if isinstance(b, Binding)} | {"x"} <= keys
            await pilot.press("x")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmStop))
            await pilot.pause()
            box = app.screen.query_one("#confirm-stop").region
            assert Region(0, 0, 80, 24).contains_region(box), box
            await pilot.press("s")
            await wait_for(pilot, lambda: dash.stop_event.is_set())
            endpoint.release(10)
            await wait_for(pilot, lambda: not dash.running, timeout=20)
    finally:
        endpoint.close()
