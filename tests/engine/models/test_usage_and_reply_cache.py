"""Tokens, cost and the reply cache against a real loopback HTTP server that reports usage.

The server speaks the chat-completions API (streamed with a final usage chunk, or whole) and answers by
the request: a wrong repair to a first request, the reference to a request that carries feedback. Every
request is counted, so "no second call" is what the server saw, not what the client believes. Sessions
are built and judged by the recorded toolchain (tests/data/recorded: real build outputs, replayed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
from beavertui.engine.models.reply_cache import CachedModel, ReplyCache
from beavertui.engine.session.events import Message, Reply, SessionEnd
from beavertui.engine.session.store import read_session
from tests.cli_in_process import run_cli

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "data" / "recorded"
RECORDINGS = CORPUS / "vec_scale.recordings.jsonl"
CANDIDATES = CORPUS / "vec_scale" / "candidates"
REASONING = 7
PRICE_IN, PRICE_OUT = 2.0, 8.0  # dollars per million tokens


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class UsageServer:
    """127.0.0.1 chat completions with usage; ``requests`` counts every POST, ``seen`` keeps the bodies."""

    def __init__(self) -> None:
        self.requests = 0
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self
        wrong = (CANDIDATES / "wrong.cu").read_text()
        right = (CANDIDATES / "reference.cu").read_text()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with server.lock:
                    server.requests += 1
                    server.seen.append(body)
                first = len(body["messages"]) <= 2
                code = wrong if first else right
                text = f"Attempt:\n```cuda\n{code}\n```\n"
                prompt = sum(_tokens(m["content"]) for m in body["messages"])
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": _tokens(text) + REASONING,
                    "total_tokens": prompt + _tokens(text) + REASONING,
                    "completion_tokens_details": {"reasoning_tokens": REASONING},
                }
                base = {"id": "c", "created": 0, "model": body["model"]}
                if body.get("stream"):
                    chunks = [
                        {**base, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
                        {**base, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                        {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage},
                    ]  # fmt: skip
                    data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                    data += b"data: [DONE]\n\n"
                    kind = "text/event-stream"
                else:
                    data = json.dumps(
                        {**base, "object": "chat.completion", "usage": usage,
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}]}
                    ).encode()  # fmt: skip
                    kind = "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> UsageServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


def _protocol(tmp: Path, url: str, *, temperature: float = 0.0, prices: bool = True) -> Path:
    price = f"input_usd_per_mtok = {PRICE_IN}\noutput_usd_per_mtok = {PRICE_OUT}\n" if prices else ""
    text = (
        'name = "usage"\nsamples = 2\n[protocol]\nbudget = 3\n'
        f"temperature = {temperature}\n\n"
        f'[[models]]\nmodel = "coder"\nbase_url = "{url}"\napi_key_env = "USAGE_TEST_KEY"\n{price}'
    )
    path = tmp / f"usage-{temperature}.toml"
    path.write_text(text)
    return path


def _batch(tmp: Path, *args: str, cache: Path, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``beavertui batch`` over the recorded corpus: in this process, or with ``process`` as
    ``python3 -m beavertui`` (the first test keeps the command's real entry point under test)."""
    env = {**os.environ, "USAGE_TEST_KEY": "sk-usage", "BEAVERTUI_REPLY_CACHE": str(cache)}
    argv = ["batch", "--corpus", str(CORPUS), "--sessions-dir", str(tmp), "--quiet", "--jobs", "2", *args]
    if not process:
        return run_cli(*argv, env=env)
    return subprocess.run(
        [sys.executable, "-m", "beavertui", *argv], capture_output=True, text=True, env=env, timeout=120
    )


def _replies(path: Path) -> list[Reply]:
    _h, events, _p = read_session(path)
    return [e for e in events if isinstance(e, Reply)]


def test_a_batch_records_usage_and_cost_and_metrics_and_the_browser_show_them(tmp_path: Path) -> None:
    with UsageServer() as server:
        proto = _protocol(tmp_path, server.url)
        out = _batch(
            tmp_path, "--protocol", str(proto), "--toolchain", f"recorded:{RECORDINGS}", "--run-id", "r",
            cache=tmp_path / "cache", process=True,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        seen = list(server.seen)
    run = tmp_path / "r"
    files = sorted(run.rglob("*.jsonl"))
    assert len(files) == 2 and server.requests == 4  # two samples, each: wrong, then the reference
    prompt = completion = 0
    for f in files:
        replies = _replies(f)
        assert [r.cached for r in replies] == [False, False]
        for r in replies:
            assert r.reasoning_tokens == REASONING and r.latency_s > 0
            assert r.cost_usd == pytest.approx(
                (r.prompt_tokens * PRICE_IN + r.completion_tokens * PRICE_OUT) / 1e6  # type: ignore[operator]
            )
        _h, events, _p = read_session(f)
        end = events[-1]
        assert isinstance(end, SessionEnd) and end.usage is not None and end.success
        assert end.usage.prompt_tokens == sum(r.prompt_tokens or 0 for r in replies)
        assert end.usage.cost_usd == pytest.approx(sum(r.cost_usd or 0 for r in replies))
        prompt += end.usage.prompt_tokens
        completion += end.usage.completion_tokens
    # the sums are the server's own counts
    assert prompt == sum(sum(_tokens(m["content"]) for m in b["messages"]) for b in seen)
    # metrics: per group, per session and per repair
    doc = json.loads(run_cli("metrics", run, "--json", check=True).stdout)
    (u,) = doc["usage"]
    cost = (prompt * PRICE_IN + completion * PRICE_OUT) / 1e6
    assert (u["sessions"], u["repaired"], u["replies"], u["prompt_tokens"]) == (2, 2, 4, prompt)
    assert u["reasoning_tokens"] == 4 * REASONING and u["cached"] == 0
    assert u["cost_usd"] == pytest.approx(cost) and u["cost_per_repair_usd"] == pytest.approx(cost / 2)
    text = run_cli("metrics", run, check=True, env={**os.environ, "COLUMNS": "80"}).stdout
    assert "Tokens and cost per model and protocol" in text
    from beavertui.engine.session.usage import dollars

    assert dollars(cost) in text and dollars(cost / 2) in text
    # the browser's rows and the batch's summary table
    from beavertui.service.catalog import read_row
    from beavertui.tui.browser import cells

    row = read_row(files[0])
    assert row.tokens == sum((r.prompt_tokens or 0) + (r.completion_tokens or 0) for r in _replies(files[0]))
    assert row.cost == pytest.approx(sum(r.cost_usd or 0 for r in _replies(files[0])))
    shown = [c[0] for c in cells(row)]
    assert dollars(row.cost) in shown
    summary = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.startswith("{") else None
    assert summary is None and "Run " in out.stdout and dollars(cost) in out.stdout


@pytest.mark.slow
def test_a_resumed_batch_asks_no_reply_twice(tmp_path: Path) -> None:
    """A run cut after a reply was received (before it was judged) resumes with the stored reply: the server
    sees no second request for it; a re-run with another toolchain asks for nothing it was asked before."""
    cache = tmp_path / "cache"
    with UsageServer() as server:
        proto = _protocol(tmp_path, server.url)
        tc = f"recorded:{RECORDINGS}"
        out = _batch(tmp_path, "--protocol", str(proto), "--toolchain", tc, "--run-id", "r", cache=cache)
        assert out.returncode == 0, out.stderr
        assert server.requests == 4
        # cut one session right after its second reply, as a kill at that moment leaves it
        path = sorted((tmp_path / "r").rglob("*.jsonl"))[0]
        lines = path.read_text().splitlines(True)
        cut = next(i for i, ln in enumerate(lines) if '"kind":"reply"' in ln and '"iteration":2' in ln)
        path.write_text("".join(lines[: cut + 1]))
        again = _batch(tmp_path, "--resume", str(tmp_path / "r"), cache=cache)
        assert again.returncode == 0, again.stderr
        assert server.requests == 4  # the reply it had came from the cache
        assert "1 replies reused" in again.stderr
        replies = _replies(path)
        assert [r.cached for r in replies] == [False, False, True]  # the cut reply, then its reuse
        _h, events, _p = read_session(path)
        assert isinstance(events[-1], SessionEnd) and events[-1].success
        assert events[-1].usage is not None and events[-1].usage.cached == 1
        assert events[-1].usage.paid_usd == pytest.approx(sum(r.cost_usd or 0 for r in replies[:2]))
        # the same sweep again, as a new run with another toolchain file: every reply from the cache
        other = tmp_path / "copy.recordings.jsonl"
        other.write_bytes(RECORDINGS.read_bytes())
        rerun = _batch(
            tmp_path,
            "--protocol",
            str(proto),
            "--toolchain",
            f"recorded:{other}",
            "--run-id",
            "r2",
            cache=cache,
        )
        assert rerun.returncode == 0, rerun.stderr
        assert server.requests == 4 and "4 replies reused, 0 new ones stored" in rerun.stderr
        # without the cache, the endpoint is asked again
        fresh = _batch(
            tmp_path, "--protocol", str(proto), "--toolchain", tc, "--run-id", "r3", "--no-reply-cache",
            cache=cache,
        )  # fmt: skip
        assert fresh.returncode == 0 and server.requests == 8


def test_two_batches_in_one_process_each_count_their_own_replies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A program that runs two batches through ``beavertui.cli.main`` in one process (as the TUI or an
    embedding program does) gets, after each, the reply cache counts of that run alone."""
    from beavertui.cli import main

    cache = tmp_path / "cache"
    monkeypatch.setenv("USAGE_TEST_KEY", "sk-usage")
    tc = f"recorded:{RECORDINGS}"
    with UsageServer() as server:
        proto = _protocol(tmp_path, server.url)

        def batch(run_id: str) -> str:
            argv = ["batch", "--corpus", str(CORPUS), "--sessions-dir", str(tmp_path), "--quiet", "--jobs", "2",
                    "--protocol", str(proto), "--toolchain", tc, "--run-id", run_id, "--reply-cache", str(cache)]  # fmt: skip
            assert main(argv) == 0
            return capsys.readouterr().err

        first = batch("a")
        assert server.requests == 4
        assert f"reply cache {cache}: 0 replies reused, 4 new ones stored" in first
        second = batch("b")  # the same sweep again: every reply from the cache, none stored
        assert server.requests == 4
        assert f"reply cache {cache}: 4 replies reused, 0 new ones stored" in second, second


def test_sampled_replies_are_not_reused_unless_asked(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    tc = f"recorded:{RECORDINGS}"
    with UsageServer() as server:
        proto = _protocol(tmp_path, server.url, temperature=0.7)
        for run_id in ("a", "b"):
            assert _batch(
                tmp_path, "--protocol", str(proto), "--toolchain", tc, "--run-id", run_id, cache=cache
            )
        assert server.requests == 8  # temperature 0.7: every run samples afresh
        for run_id in ("c", "d"):
            out = _batch(
                tmp_path, "--protocol", str(proto), "--toolchain", tc, "--run-id", run_id,
                "--reply-cache-sampled", cache=cache,
            )  # fmt: skip
            assert out.returncode == 0, out.stderr
        assert server.requests == 12  # run c fetched and stored, run d reused them all


def test_each_draw_keeps_its_own_reply(tmp_path: Path) -> None:
    """Two samples, or two iterations, sending the same messages are separate draws; the same draw again
    (a resumed session) is served from the cache, even with another streaming setting."""
    messages = [Message(role="system", content="fix"), Message(role="user", content="the kernel")]
    cache = ReplyCache(tmp_path / "c")
    with UsageServer() as server:

        def model(sample: int, stream: bool = True) -> CachedModel:
            config = OpenAIConfig(model="m", base_url=server.url, stream=stream, temperature=0.0)
            return CachedModel(OpenAIModel(config, api_key="k"), cache, sample=sample)

        a = model(0)
        first, second = a.complete(messages), a.complete(messages)  # iterations 1 and 2
        assert server.requests == 2 and not first.cached and not second.cached
        model(1).complete(messages)
        assert server.requests == 3
        resumed = model(0, stream=False)
        resumed.resume_at(1)
        got = resumed.complete(messages)  # iteration 2 of sample 0
        assert server.requests == 3 and got.cached and got.content == second.content
        assert (got.prompt_tokens, got.reasoning_tokens) == (second.prompt_tokens, REASONING)
    assert cache.stats.hits == 1 and cache.stats.stored == 3
    assert not any("sk-" in p.read_text() for p in (tmp_path / "c").rglob("*.json"))


def test_old_session_files_without_usage_still_read() -> None:
    from beavertui.engine.metrics.usage import run_usage
    from beavertui.service.catalog import read_row

    old = ROOT / "sessions" / "demo" / "repair_in_three.jsonl"
    header, events, problem = read_session(old)
    assert header is not None and problem is None
    end = events[-1]
    assert isinstance(end, SessionEnd) and end.usage is None
    assert all(r.cost_usd is None and not r.cached for r in events if isinstance(r, Reply))
    assert read_row(old).tokens is None and read_row(old).cost is None
    (g,) = run_usage(old).values()
    assert g.usage.replies == 3 and g.usage.unreported == 3 and not g.reported


def test_the_evaluation_card_says_tokens_and_cost(tmp_path: Path) -> None:
    from beavertui.engine.session.usage import dollars
    from beavertui.reports.card import card
    from beavertui.service.metrics import compute

    with UsageServer() as server:
        proto = _protocol(tmp_path, server.url)
        out = _batch(
            tmp_path, "--protocol", str(proto), "--toolchain", f"recorded:{RECORDINGS}", "--run-id", "r",
            cache=tmp_path / "cache",
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
    report = compute(tmp_path / "r")
    text = card(tmp_path / "r", report.groups, "test")
    (g,) = report.usage.values()  # type: ignore[union-attr]
    assert "## Tokens and cost" in text
    assert f"${PRICE_IN:g} per million prompt tokens" in text
    assert f"per repair {dollars(g.cost_per_repair)}" in text and "Whole run:" in text
    assert "from the cache" not in text  # nothing of this run came from the cache


def test_a_priced_model_whose_endpoint_sends_no_usage_says_so_in_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that streams no usage (Ollama's OpenAI API in a stream): `metrics` printed no tokens-and-cost
    table at all, and said nothing, though the models file priced the model; the batch's summary said its
    cost '-' meant 'without prices'. The table is there now, '0/N' replies reported, unknown not zero, and
    says why."""
    import tomllib

    from beavertui.cli import main
    from beavertui.engine import bundled
    from tests.loopback_endpoint import Endpoint, chunk

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    repair = str(doc["reply"][2]["content"])

    def answer(model: str, _body: dict[str, Any], _headers: dict[str, str]) -> tuple[str, Any]:
        return "stream", [chunk(model, repair), chunk(model, None, "stop")]  # no usage chunk

    with Endpoint(answer) as server:
        models = tmp_path / "models.toml"
        models.write_text(
            f"[models.q]\nmodel = 'qwen2.5-coder:7b'\nbase_url = '{server.url}'\n"
            "input_usd_per_mtok = 0.5\noutput_usd_per_mtok = 1.5\n"
        )
        rc = main(["batch", "--models-file", str(models), "--models", "q", "--tasks", "transpose_00",
                   "--toolchain", "demo", "--run-id", "o", "--no-reply-cache"])  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    assert rc == 0
    assert "cost at the models' prices (- without prices, or without token counts)" in out
    assert main(["metrics", "sessions/o", "--table", "usage", "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[1].startswith("q [model=qwen2.5-coder:7b],") and ",1,0,,,," in rows[1], rows
    assert main(["metrics", "sessions/o", "--table", "usage"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "usage reported 0/1" in text
    assert "An endpoint sent no token counts for some replies (usage reported below all): their tokens and cost " \
        "are unknown, not zero" in text  # fmt: skip


def _repeated(tmp: Path, url: str, seed: int | None) -> Path:
    """Repeated sampling, K = 3, two samples a task, at temperature 0.7 (no reply reused)."""
    line = f"seed = {seed}\n" if seed is not None else ""
    text = (
        f'name = "draws"\nsamples = 2\n[protocol]\nmethod = "repeated"\nbudget = 3\ntemperature = 0.7\n{line}\n'
        f'[[models]]\nmodel = "coder"\nbase_url = "{url}"\napi_key_env = "USAGE_TEST_KEY"\n'
    )
    path = tmp / f"draws-{seed}.toml"
    path.write_text(text)
    return path


def test_each_draw_sends_its_own_seed_and_a_resumed_draw_the_same(tmp_path: Path) -> None:
    """With a protocol seed, the K first-turn samples of a repeated-sampling session and the samples of a
    task send different seeds (the server saw them), so an endpoint that honours seeds gives K draws, not
    one reply K times; a resumed session sends each remaining draw the seed it had."""
    cache = tmp_path / "cache"
    with UsageServer() as server:
        proto = _repeated(tmp_path, server.url, 7)
        tc = f"recorded:{RECORDINGS}"
        out = _batch(tmp_path, "--protocol", str(proto), "--toolchain", tc, "--run-id", "s", cache=cache)
        assert out.returncode == 0, out.stderr
        assert server.requests == 6 and all(len(b["messages"]) <= 2 for b in server.seen)  # first turns
        seeds = [b["seed"] for b in server.seen]
        assert len(set(seeds)) == 6  # every draw its own
        # cut one session right after its second reply (before it was judged), then resume the run
        path = sorted((tmp_path / "s").rglob("*.jsonl"))[0]
        header, _e, _p = read_session(path)
        assert header is not None
        lines = path.read_text().splitlines(True)
        cut = next(i for i, ln in enumerate(lines) if '"kind":"reply"' in ln and '"iteration":2' in ln)
        path.write_text("".join(lines[: cut + 1]))
        first = sorted(seeds)[3 * header.sample : 3 * header.sample + 3]  # this sample's draws, in order
        again = _batch(tmp_path, "--resume", str(tmp_path / "s"), cache=cache)
        assert again.returncode == 0, again.stderr
        assert server.requests == 8
        assert [b["seed"] for b in server.seen[6:]] == first[1:]  # iterations 2 and 3 again, same seeds
    assert [r.iteration for r in _replies(path)] == [1, 2, 2, 3]


def test_no_protocol_seed_sends_no_seed(tmp_path: Path) -> None:
    with UsageServer() as server:
        proto = _repeated(tmp_path, server.url, None)
        tc = f"recorded:{RECORDINGS}"
        out = _batch(
            tmp_path, "--protocol", str(proto), "--toolchain", tc, "--run-id", "n", cache=tmp_path / "c"
        )
        assert out.returncode == 0, out.stderr
        assert server.requests == 6 and not any("seed" in b for b in server.seen)


def test_reasoning_an_endpoint_does_not_report_is_not_shown_as_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two endpoint models behind a loopback server: one reports its reasoning tokens
    (``completion_tokens_details.reasoning_tokens``), the other gives token counts without that detail. The
    second's reasoning was summed as 0 everywhere (the end line, --json, the tables, the card), which reads as
    "the model did not reason"; now the end line records the replies without a reasoning count, --json gives
    null, the tables n/a (CSV: empty) and the card "reasoning not reported"."""
    import csv
    import tomllib

    from beavertui.cli import main
    from beavertui.engine import bundled
    from tests.loopback_endpoint import Endpoint, chunk

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    repair = str(doc["reply"][2]["content"])

    def answer(model: str, _body: dict[str, Any], _headers: dict[str, str]) -> tuple[str, Any]:
        usage: dict[str, Any] = {"prompt_tokens": 30, "completion_tokens": 20, "total_tokens": 50}
        if model == "thinker":
            usage["completion_tokens_details"] = {"reasoning_tokens": REASONING}
        last = {**chunk(model, None), "choices": [], "usage": usage}
        return "stream", [chunk(model, repair), chunk(model, None, "stop"), last]

    with Endpoint(answer) as server:
        models = tmp_path / "models.toml"
        models.write_text(
            f"[models.t]\nmodel = 'thinker'\nbase_url = '{server.url}'\n"
            f"[models.s]\nmodel = 'silent'\nbase_url = '{server.url}'\n"
        )
        rc = main(["batch", "--models-file", str(models), "--models", "t", "s", "--tasks", "transpose_00",
                   "--toolchain", "demo", "--run-id", "o", "--no-reply-cache"])  # fmt: skip
        out = capsys.readouterr()
    assert rc == 0, out.err
    ends = {}
    for f in sorted((tmp_path / "sessions" / "o").rglob("*.jsonl")):
        header, events, _p = read_session(f)
        assert header is not None and isinstance(events[-1], SessionEnd) and events[-1].usage is not None
        ends[header.model.name] = events[-1].usage
    assert ends["thinker"].reasoning_tokens == REASONING and ends["thinker"].reasoning_unreported == 0
    assert ends["silent"].reasoning_unreported == ends["silent"].replies == 1
    assert ends["silent"].reasoning_reported == 0 and ends["silent"].completion_tokens == 20
    # an end line written before the field reads as before: every reasoning count taken as reported
    old = {k: v for k, v in ends["silent"].model_dump().items() if k != "reasoning_unreported"}
    assert type(ends["silent"]).model_validate(old).reasoning_reported == 1

    assert main(["metrics", "sessions/o", "--json"]) == 0
    usage = {u["model"].split(" ")[0]: u for u in json.loads(capsys.readouterr().out)["usage"]}
    assert usage["t"]["reasoning_tokens"] == REASONING and usage["t"]["reasoning_unreported"] == 0
    assert usage["s"]["reasoning_tokens"] is None and usage["s"]["reasoning_unreported"] == 1

    assert main(["metrics", "sessions/o", "--table", "usage", "--format", "csv"]) == 0
    rows = {r["model"].split(" ")[0]: r for r in csv.DictReader(capsys.readouterr().out.splitlines())}
    assert (rows["t"]["reasoning tokens"], rows["t"]["replies with reasoning counts"]) == (
        str(REASONING),
        "1",
    )
    assert (rows["s"]["reasoning tokens"], rows["s"]["replies with reasoning counts"]) == ("", "0")
    assert (rows["whole"]["reasoning tokens"], rows["whole"]["replies with reasoning counts"]) == (
        str(REASONING), "1",
    )  # fmt: skip

    assert main(["metrics", "sessions/o", "--table", "usage", "--format", "markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    cells = {
        ln.split("|")[1].strip().split(" ")[0]: [c.strip() for c in ln.split("|")]
        for ln in lines
        if ln.startswith("| ")
    }
    head = cells["model"]
    col = head.index("reasoning")
    assert (
        cells["t"][col] == str(REASONING)
        and cells["s"][col] == "n/a"
        and cells["whole"][col] == f">={REASONING}"
    )
    text = " ".join(" ".join(lines).split())
    assert "their reasoning tokens are unknown, not 0" in text

    assert main(["metrics", "sessions/o", "--card", "card.md"]) == 0
    capsys.readouterr()
    card = " ".join((tmp_path / "card.md").read_text().split())
    assert "out, reasoning not reported)" in card and f"out, {REASONING} reasoning)" in card
    assert f"{REASONING} reasoning in the 1 of 2 replies that report it" in card


def test_a_negative_count_is_no_count(tmp_path: Path) -> None:
    """A session line with a negative token count or cost was summed as is (the usage table showed -1200
    prompt tokens); it is now a line the reader refuses, as one of the wrong type, and a reply cache entry
    holding one is a damaged entry (a miss), not a reply whose session would then fail to be written."""
    from pydantic import ValidationError

    from beavertui.engine.models.base import Completion
    from beavertui.engine.session.events import Usage

    for field in ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cost_usd"):
        with pytest.raises(ValidationError):
            Reply(t=None, iteration=1, content="x", **{field: -1})
    for field in ("replies", "reasoning_unreported", "unreported", "cached", "cost_usd"):
        with pytest.raises(ValidationError):
            Usage(**{field: -3})
    cache = ReplyCache(tmp_path / "c")
    request = {"model": "m", "messages": [{"role": "user", "content": "k"}], "temperature": 0.0}
    cache.put(request, Completion(content="ok", prompt_tokens=3, completion_tokens=2))
    assert cache.get(request) is not None
    (entry,) = (tmp_path / "c").rglob("*.json")
    doc = json.loads(entry.read_text())
    doc["reply"]["prompt_tokens"] = -600
    entry.write_text(json.dumps(doc))
    assert cache.get(request) is None and cache.stats.unreadable == 1
