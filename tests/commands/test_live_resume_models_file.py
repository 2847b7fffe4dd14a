"""``live --resume`` reaches a session's model through the models file as ``live`` did: the entry named in
the session's header (``--models-file``, else ``$BEAVERTUI_MODELS``, else ``~/.config/beavertui/models.toml``)
says where the endpoint is, which variable holds its key and what it costs; what is asked stays the
session's. Before, a resume without ``--model`` rebuilt the endpoint from the header alone: the entry's key
variable was lost and the entry's name with it, and the resume that ``live`` itself printed was refused
("a session of model coder [model=m], not m"). The endpoint is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from beavertui.cli import main
from beavertui.engine import bundled
from beavertui.engine.session.store import load_session
from tests.engine.models.test_models_openai import ChatServer


def _repair() -> str:
    """The demo reply whose candidate the H200 recorded as a repair of transpose_00."""
    doc = tomllib.loads(bundled.demo_replies("repair_in_three").read_text(encoding="utf-8"))
    return str(doc["reply"][2]["content"])


def _models_file(path: Path, url: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[models.coder]\nmodel = "m"\nbase_url = "{url}"\napi_key_env = "CODER_KEY"\nretries = 0\n'
        "stream = false\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n"
    )
    return path


@pytest.mark.parametrize("where", ["flag", "env", "home"])
def test_a_resume_reaches_the_model_through_the_models_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr("beavertui.engine.models.resolve.DEFAULT_MODELS_FILE", tmp_path / "no-such.toml")
    monkeypatch.setenv("CODER_KEY", "k-coder-1234")
    out = tmp_path / "s.jsonl"
    with ChatServer([("500", None), ("ok", _repair())], models=["m"]) as server:
        models = _models_file(tmp_path / ".config" / "beavertui" / "models.toml", server.url)
        flag = ["--models-file", str(models)]
        if where == "env":
            monkeypatch.setenv("BEAVERTUI_MODELS", str(models))
            flag = []
        elif where == "home":
            monkeypatch.setattr("beavertui.engine.models.resolve.DEFAULT_MODELS_FILE", models)
            flag = []
        rc = main(["live", "--task", "transpose_00", "--model", "coder", *flag, "--toolchain", "demo",
                   "--headless", "--out", str(out)])  # fmt: skip
        err = capsys.readouterr().err
        assert rc == 3, err
        # the way on names the replay it ran on: the session file does not keep it, and without it a resume
        # on a machine without a GPU stops at "no NVIDIA GPU"
        assert err.splitlines()[-1] == (
            f"beavertui: to go on from here: beavertui live --resume {out} --toolchain demo"
        )
        rc = main(["live", "--resume", str(out), *flag, "--toolchain", "demo", "--headless"])
        err = capsys.readouterr().err
        assert rc == 0, err
        assert len(server.requests) == 2
        # the entry's key variable, on both calls
        assert [h.get("authorization") for h in server.headers] == ["Bearer k-coder-1234"] * 2
    header, events = load_session(out)
    assert header.model.entry == "coder" and header.model.name == "m"
    reply = [e for e in events if e.kind == "reply"][-1]
    assert reply.cost_usd is not None and reply.cost_usd > 0  # type: ignore[union-attr]  # the entry's prices
    end = events[-1]
    assert end.kind == "end" and end.success  # type: ignore[union-attr]
    assert "k-coder-1234" not in out.read_text()


def test_a_resume_without_the_entry_says_which_models_file_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("beavertui.engine.models.resolve.DEFAULT_MODELS_FILE", tmp_path / "no-such.toml")
    monkeypatch.setenv("CODER_KEY", "k-coder-1234")
    out = tmp_path / "s.jsonl"
    with ChatServer([("500", None)], models=["m"]) as server:
        models = _models_file(tmp_path / "models.toml", server.url)
        rc = main(["live", "--task", "transpose_00", "--model", "coder", "--models-file", str(models),
                   "--toolchain", "demo", "--headless", "--out", str(out)])  # fmt: skip
        assert rc == 3
        capsys.readouterr()
        before = out.read_bytes()
        rc = main(["live", "--resume", str(out), "--toolchain", "demo", "--headless"])
        (line,) = capsys.readouterr().err.splitlines()
        assert len(server.requests) == 1
    assert rc == 2
    assert line == (
        f"beavertui: {out} is a session of models-file entry coder, which no models file in force holds "
        "(--models-file, $BEAVERTUI_MODELS, ~/.config/beavertui/models.toml): give its file with --models-file FILE"
    )
    assert out.read_bytes() == before
    assert json.loads(before.splitlines()[0])["model"]["entry"] == "coder"
