"""The preflight of the commands that run sessions, through the real CLI: a missing key, an endpoint that is
not there, refuses the key or does not serve the model is one line naming the fix, exit 2, and no run folder;
the endpoint checks ask a real HTTP server on 127.0.0.1. Then the exit statuses: 3 when an endpoint failure
ends a session, the flags shared by every command that asks a model, and the old ``--models FILE``."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from beavertui.cli import build_parser, main
from beavertui.engine import bundled
from beavertui.engine.errors import EXIT_STATUS_HELP
from tests.engine.models.test_models_openai import ChatServer

ROOT = Path(__file__).resolve().parents[2]


def _clean_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))  # no ~/.config/beavertui/models.toml of the user's


def _demo_reply(name: str, n: int) -> str:
    """The ``n``-th hand-written reply of a bundled demo (its candidate's outcome is recorded)."""
    doc = tomllib.loads(bundled.demo_replies(name).read_text(encoding="utf-8"))
    return str(doc["reply"][n]["content"])


def test_a_batch_without_a_key_is_one_line_naming_the_variable_exit_2_and_writes_nothing(
    tmp_path: Path,
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS")
    }
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    for extra in ([], ["--dry-run"]):
        out = subprocess.run(
            [sys.executable, "-m", "beavertui", "batch", "--models", "some-model", *extra],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 2, out.stderr
        (line,) = out.stderr.splitlines()
        assert line.startswith("beavertui: no API key for model some-model: set OPENAI_API_KEY"), line
        assert "--base-url" in line
        assert not (tmp_path / "sessions").exists()
        assert out.stdout == ""


def test_a_models_file_entry_names_its_own_key_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    models = tmp_path / "models.toml"
    models.write_text('[models.team-coder]\napi_key_env = "TEAM_KEY"\n')
    monkeypatch.delenv("TEAM_KEY", raising=False)
    rc = main(
        ["batch", "--models", "team-coder", "--models-file", str(models), "--sessions-dir", str(tmp_path)]
    )
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("beavertui: no API key for model team-coder: set TEAM_KEY"), err
    assert list(tmp_path.iterdir()) == [models]


@pytest.mark.parametrize("command", ["batch", "live"])
def test_endpoint_checks_against_a_loopback_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    if command == "batch":
        base = ["batch", "--tasks", "transpose_00", "--toolchain", "demo", "--sessions-dir",
                str(tmp_path / "s")]  # fmt: skip
        models = ["--models"]
    else:
        base = ["live", "--task", "transpose_00", "--toolchain", "demo", "--headless",
                "--sessions-dir", str(tmp_path / "s")]  # fmt: skip
        models = ["--model"]

    def run(*args: str) -> tuple[int, list[str]]:
        rc = main([*base, *args])
        return rc, capsys.readouterr().err.splitlines()

    # the server lists its models: one it does not serve is named with those it does
    with ChatServer([("ok", "no")], models=["qwen-coder", "llama-70b"]) as server:
        rc, err = run(*models, "qwen-coderr", "--base-url", server.url)
        assert server.listed == 1 and server.requests == []
    assert rc == 2 and len(err) == 1, err
    assert f"{server.url} does not serve model 'qwen-coderr' (it serves: llama-70b, qwen-coder)" in err[0]
    # a server that refuses the key on GET /models
    monkeypatch.setenv("LOCAL_KEY", "sk-wrong")
    with ChatServer([("ok", "no")], models=["m"], models_status=401) as server:
        rc, err = run(*models, "m", "--base-url", server.url, "--api-key-env", "LOCAL_KEY")
    assert rc == 2 and len(err) == 1 and "refused the key in LOCAL_KEY (HTTP 401)" in err[0], err
    assert "sk-wrong" not in err[0]
    # the same server when the variable holds no key at all: no key was refused, the variable is unset
    monkeypatch.delenv("LOCAL_KEY")
    with ChatServer([("ok", "no")], models=["m"], models_status=401) as server:
        rc, err = run(*models, "m", "--base-url", server.url, "--api-key-env", "LOCAL_KEY")
    assert rc == 2 and len(err) == 1, err
    assert f"{server.url} asks for an API key (HTTP 401) and LOCAL_KEY is not set: set LOCAL_KEY" in err[0]
    # nothing listens there
    with ChatServer([("ok", "no")]) as server:
        closed = server.url
    rc, err = run(*models, "m", "--base-url", closed)
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"beavertui: cannot reach {closed}"), err
    assert "start the server, or fix --base-url" in err[0]
    assert not (tmp_path / "s").exists()  # no failed preflight wrote anything
    if command == "batch":  # a named run's folder, made to lock it, goes too
        rc, err = run(*models, "m", "--base-url", closed, "--run-id", "named")
        assert rc == 2 and "cannot reach" in err[0] and not (tmp_path / "s").exists()


def test_a_batch_against_a_loopback_server_runs_and_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's path for a local server: the model is listed, the batch runs on the demo toolchain
    (the reply is one whose outcome the H200 recorded), and metrics reads the run."""
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    with ChatServer([("ok", _demo_reply("repair_in_three", 2))], models=["local-coder"]) as server:
        rc = main([
            "batch", "--models", "local-coder", "--base-url", server.url, "--no-stream", "--timeout", "30",
            "--tasks", "transpose_00", "--toolchain", "demo", "--run-id", "r", "--quiet", "--no-reply-cache",
        ])  # fmt: skip
        assert server.listed == 1 and len(server.requests) == 1
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "1/1 sessions (0 already done), 1 passed" in err
    # the task has no stored verdict for the replayed GPU: said in one line, without promising a check on a
    # GPU that a replay cannot make (it reads the recorded outcomes)
    (line,) = [x for x in err.splitlines() if "validate" in x or "stored verdict" in x]
    assert line.startswith(
        "beavertui: 1 task(s) have no stored verdict for nvidia_h200_sm_90_cuda_13_0, whose recorded outcomes "
        "this replay reads, and run anyway; a replay validates nothing on a GPU"
    ), line
    assert "not validated on" not in line and "corpus validate" not in line
    from beavertui.batch.rundir import read_manifest

    (spec,) = read_manifest(tmp_path / "sessions" / "r").models
    assert (spec.base_url, spec.stream, spec.timeout_s) == (server.url, False, 30.0)
    assert main(["metrics", "sessions/r", "--format", "csv", "--table", "main"]) == 0
    assert "local-coder" in capsys.readouterr().out


def test_an_ollama_model_named_without_its_tag_is_the_latest_one_ollama_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ollama lists a model pulled without a tag as ``NAME:latest`` and serves it under ``NAME`` too; the
    preflight refused ``--models qwen2.5-coder`` (exit 2, "does not serve model") though the server would
    answer it. The name is sent as given, and another tag is still refused with the names served."""
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    served = ["qwen2.5-coder:latest", "llama3.1:8b"]
    with ChatServer([("ok", _demo_reply("repair_in_three", 2))], models=served) as server:
        rc = main([
            "batch", "--models", "qwen2.5-coder", "--base-url", server.url, "--no-stream", "--tasks",
            "transpose_00", "--toolchain", "demo", "--run-id", "o", "--quiet", "--no-reply-cache",
        ])  # fmt: skip
        err = capsys.readouterr().err
        assert rc == 0, err
        assert [r["model"] for r in server.requests] == ["qwen2.5-coder"]
        rc = main(["batch", "--models", "llama3.1", "--base-url", server.url, "--tasks", "transpose_00",
                   "--toolchain", "demo", "--dry-run"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "does not serve model 'llama3.1' (it serves: llama3.1:8b, qwen2.5-coder:latest)" in err


def test_a_base_url_that_is_a_web_page_is_named_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A base URL that serves a web UI (an HTML page for every path, 200) passed the preflight, 'taken as
    reachable', and every call then failed with 'turn streaming off (--no-stream ...)', advice that cannot
    help. The preflight names it now, exit 2, nothing written; a call that meets such a page says so."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from beavertui.engine.models.base import EndpointError
    from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
    from beavertui.engine.session.events import Message

    page = b"<!doctype html><html><head><title>Chat UI</title></head><body><div id=app></div></body></html>"

    class Page(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.do_GET()

    _clean_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        rc = main(
            ["batch", "--models", "m", "--base-url", url, "--tasks", "transpose_00", "--toolchain", "demo"]
        )
        (line,) = capsys.readouterr().err.splitlines()
        model = OpenAIModel(OpenAIConfig(model="m", base_url=url, retries=0), api_key="k")
        with pytest.raises(EndpointError) as err:
            model.complete([Message(role="user", content="fix")])
    finally:
        server.shutdown()
        server.server_close()
    assert rc == 2 and f"{url} answers GET /models with an HTML page, not the OpenAI API" in line, line
    assert not (tmp_path / "sessions").exists()
    assert "an HTML page (text/html), not the OpenAI API: check the base URL" in str(err.value)
    assert "--no-stream" not in str(err.value)


def test_a_server_without_a_model_list_is_taken_as_reachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    with ChatServer([("ok", "no")]) as server:  # GET /v1/models: 404
        rc = main(["batch", "--models", "m", "--base-url", server.url, "--toolchain", "demo", "--gpus", "0",
                   "--tasks", "transpose_00", "--dry-run", "--sessions-dir", str(tmp_path / "s")])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert not (tmp_path / "s").exists()
    # a replay uses no GPU: the --gpus given is said to be unused, not taken in silence
    assert "beavertui: --gpus 0 is not used: the demo toolchain replays recorded outcomes" in err.splitlines()
    # the paper's protocol samples at T0.7: the dry run says its reply cache holds nothing for it
    (line,) = [x for x in out.splitlines() if x.startswith("reply cache:")]
    assert line.endswith(
        "(unused here: every protocol samples at T > 0; --reply-cache-sampled reuses those replies)"
    )


@pytest.mark.parametrize("command", ["batch", "live"])
def test_a_base_url_without_v1_is_one_line_naming_the_v1_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """vLLM and Ollama serve the API under /v1: `--base-url http://localhost:8000` finds no /models there,
    and every request would be a 404. The preflight sees BASE/v1 list the model and says so."""
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    with ChatServer([("ok", "no")], models=["qwen-coder"]) as server:
        bare = server.url.removesuffix("/v1")
        if command == "batch":
            args = ["batch", "--models", "qwen-coder", "--tasks", "transpose_00", "--run-id", "r"]
        else:
            args = ["live", "--task", "transpose_00", "--model", "qwen-coder", "--headless"]
        rc = main([*args, "--base-url", bare + "/", "--toolchain", "demo"])
        assert server.requests == []
    (line,) = capsys.readouterr().err.splitlines()
    assert rc == 2
    assert line == (
        f"beavertui: {bare}/ has no /models route, but {server.url} lists models (qwen-coder): the OpenAI API "
        f"is under /v1 there, so give --base-url {server.url} (or set OPENAI_BASE_URL, or the models file's "
        "base_url, to it)"
    )
    assert not (tmp_path / "sessions").exists()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("{host}/v1", "is not an http:// or https:// URL with a host: give it whole, e.g. --base-url {url}"),
        (
            "{url}/chat/completions",
            "ends in the route /chat/completions, which each call adds itself: give "
            "the part before it, --base-url {url}",
        ),
        (
            "{url}/models/",
            "ends in the route /models, which each call adds itself: give the part before it, "
            "--base-url {url}",
        ),
    ],
    ids=["no-scheme", "chat-route", "models-route"],
)
def test_a_base_url_that_cannot_be_one_is_named_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], given: str, said: str
) -> None:
    """'localhost:8000/v1' (no scheme) and a base URL with the API's route appended passed the preflight (the
    model list failed in a way taken as 'a server without that route'), then every call of the run failed."""
    _clean_env(monkeypatch, tmp_path)
    with ChatServer([("ok", "no")], models=["m"]) as server:
        host = server.url.removeprefix("http://").removesuffix("/v1")
        base = given.format(host=host, url=server.url)
        rc = main(["batch", "--models", "m", "--base-url", base, "--toolchain", "demo", "--tasks", "transpose_00",
                   "--sessions-dir", str(tmp_path / "s")])  # fmt: skip
        assert server.listed == 0 and server.requests == []
    (line,) = capsys.readouterr().err.splitlines()
    assert rc == 2 and line.startswith(f"beavertui: base URL {base!r} "), line
    assert said.format(url=server.url) in line
    assert not (tmp_path / "s").exists()


def test_a_grid_of_several_models_names_the_model_whose_endpoint_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`reproduce --release-configs` reads nine configs with their own base URLs: 'cannot reach
    http://localhost:8006/v1' alone did not say which config to fix."""
    _clean_env(monkeypatch, tmp_path)
    with ChatServer([("ok", "no")]) as server:
        closed = server.url
    with ChatServer([("ok", "no")], models=["up"]) as server:
        models = tmp_path / "models.toml"
        models.write_text(f'[models.up]\nbase_url = "{server.url}"\n[models.down]\nbase_url = "{closed}"\n')
        rc = main(["batch", "--models", "up", "down", "--models-file", str(models), "--toolchain", "demo",
                   "--tasks", "transpose_00", "--sessions-dir", str(tmp_path / "s")])  # fmt: skip
    (line,) = capsys.readouterr().err.splitlines()
    assert rc == 2 and line.startswith(f"beavertui: model down: cannot reach {closed} ("), line
    assert not (tmp_path / "s").exists()


def test_an_endpoint_failure_that_ends_a_session_exits_3_not_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    out = tmp_path / "s.jsonl"
    with ChatServer([("500", None)], models=["m"]) as server:
        rc = main(["live", "--task", "transpose_00", "--model", "m", "--base-url", server.url, "--no-stream",
                   "--retries", "0", "--toolchain", "demo", "--headless", "--out", str(out)])  # fmt: skip
    assert rc == 3, capsys.readouterr().err
    assert '"stop_reason":"error"' in out.read_text().replace(" ", "")
    # the model failing is 1: the demo's no_progress session ends stalled, without a repair
    rc = main(["live", "--demo", "no_progress", "--headless", "--out", str(tmp_path / "n.jsonl")])
    assert rc == 1, capsys.readouterr().err


def test_live_without_a_model_says_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["live", "--task", "transpose_00"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("beavertui: live needs --model MODEL (the model to ask: an endpoint model name")
    assert "--task" not in line.split(";")[0] and "--demo" in line


def test_every_help_ends_with_the_exit_statuses() -> None:
    parser = build_parser()
    want = " ".join(EXIT_STATUS_HELP.split())
    sub = next(a for a in parser._actions if a.dest == "command")
    helps = {"": parser.format_help(), **{n: p.format_help() for n, p in sub.choices.items()}}  # type: ignore[attr-defined]
    assert len(helps) > 10
    for name, text in helps.items():
        assert want in " ".join(text.split()), name


def test_every_command_that_asks_a_model_has_the_same_endpoint_flags() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    flags = {"--base-url", "--api-key-env", "--models-file", "--top-p", "--max-tokens", "--reasoning-effort",
             "--extra-body", "--timeout", "--retries", "--no-stream"}  # fmt: skip
    for name in ("live", "batch", "branch", "attribute"):
        parser = sub.choices[name]  # type: ignore[attr-defined]
        have = {o for a in parser._actions for o in a.option_strings}
        assert flags <= have, (name, flags - have)
    batch = sub.choices["batch"]  # type: ignore[attr-defined]
    (models,) = [a for a in batch._actions if "--models" in a.option_strings]
    assert models.nargs == "+"  # --models: model names, in every command that has it


def test_the_old_models_file_spelling_still_works_with_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    demo = str(bundled.demo_sessions() / "repair_in_three.jsonl")
    missing = tmp_path / "nowhere.toml"
    rc = main(["branch", demo, "--at", "1", "--model", "team-coder", "--models", str(missing),
               "--recorded", demo, "--out", str(tmp_path / "b.jsonl")])  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert rc == 2
    assert err[0] == "beavertui: --models FILE is now --models-file FILE (--models lists model names)"
    assert err[1] == f"beavertui: {missing}: no such models file"  # the old spelling was read as the file


def test_without_a_gpu_each_command_points_to_what_it_can_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import gpu_present

    if gpu_present():
        pytest.skip("needs a machine without a GPU")
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "transpose_00"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "`beavertui live --demo`" in line and "--toolchain" not in line  # check has no such flag
    for argv in (["live", "--task", "transpose_00", "--model", "scripted:@reference", "--headless"],
                 ["batch", "--models", "scripted:@reference", "--tasks", "transpose_00"]):  # fmt: skip
        assert main(argv) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert "--demo" in line and "--toolchain demo" in line, line
    assert not (tmp_path / "sessions").exists()


def test_reproduce_checks_before_it_makes_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """reproduce runs one batch per model under --out: the preflight comes before the folder and the
    protocol files it writes, and the endpoint flags are the same as everywhere."""
    _clean_env(monkeypatch, tmp_path)
    corpus = ROOT / "tests" / "data" / "recorded"
    out = tmp_path / "grid"
    argv = ["reproduce", "--corpus", str(corpus), "--models", "some-model", "--out", str(out),
            "--toolchain", f"recorded:{corpus / 'vec_scale.recordings.jsonl'}"]  # fmt: skip
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "no API key for model some-model: set OPENAI_API_KEY" in line
    with ChatServer([("ok", "no")], models=["other"]) as server:
        assert main([*argv, "--base-url", server.url, "--timeout", "5"]) == 2
    assert f"{server.url} does not serve model 'some-model'" in capsys.readouterr().err
    assert not out.exists()


def test_a_branch_ended_by_its_endpoint_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _clean_env(monkeypatch, tmp_path)
    with ChatServer([("500", None)], models=["m"]) as server:
        rc = main(["branch", "demo:repair_in_three", "--at", "1", "--model", "m", "--base-url", server.url,
                   "--no-stream", "--retries", "0", "--recorded", "demo:", "--out", str(tmp_path / "b.jsonl")])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 3 and "ended: error" in out, out


def test_live_on_the_demo_toolchain_ends_at_an_unrecorded_candidate_unless_told_to_fail_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's own-model road without a GPU: a candidate the demos never recorded ends a live session
    as an infrastructure error (3) whose line names the flag; with it, the candidate fails to build (1)."""
    _clean_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    base = ["live", "--task", "scan_01", "--toolchain", "demo", "--headless", "--sessions-dir", str(tmp_path)]
    with ChatServer([("stream", ["```cuda\nint never_recorded;\n```"])], models=["m"]) as server:
        assert main([*base, "--model", "m", "--base-url", server.url]) == 3
        out = capsys.readouterr().out
        assert "no recorded outcome for this candidate on task scan_01" in out
        assert "--unknown-candidates fail" in out
        rc = main([*base, "--model", "m", "--base-url", server.url, "--unknown-candidates", "fail"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "unrecorded candidate" in out and out.splitlines()[-1].startswith("end "), out
