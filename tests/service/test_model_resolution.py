"""`live`, `branch` and `batch` turn one model name into the same endpoint (engine/models/resolve.py).

A models file names `team-coder` as the endpoint model `coder-7b` at a loopback server. Each command's own
way of building its model is asked for `team-coder`; each model then makes one real call, and the server
sees all three arrive as `coder-7b` with the key the file names, at the protocol's temperature.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from beavertui.batch.models import build_model as batch_model
from beavertui.batch.protocol_file import ModelSpec
from beavertui.cli import build_parser
from beavertui.commands import live as live_command
from beavertui.engine.corpus.load import load_corpus
from beavertui.engine.session.events import Message, SessionHeader
from beavertui.engine.session.protocol import Protocol
from beavertui.engine.session.store import read_session
from beavertui.service.branching import BranchOptions, model_of
from tests.engine.models.test_models_openai import ChatServer

DATA = Path(__file__).resolve().parents[1] / "data" / "recorded"


def _models_file(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(
        f'[models.team-coder]\nmodel = "coder-7b"\nbase_url = "{url}"\napi_key_env = "TEAM_KEY"\n',
        encoding="utf-8",
    )
    return path


def _parent_header() -> SessionHeader:
    """The header of a recorded session: the branch's parent (its model is replaced by the option)."""
    header, _events, problem = read_session(DATA.parents[2] / "sessions" / "demo" / "repair_in_three.jsonl")
    assert header is not None, problem
    return header


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_live_branch_and_batch_reach_the_same_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    task = load_corpus(DATA, ["vec_scale"]).get("vec_scale")
    protocol = Protocol(temperature=0.4)
    monkeypatch.setenv("TEAM_KEY", "sk-team-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one")
    with ChatServer([("stream", ["```cuda\n", "__global__ void k() {}\n", "```\n"])]) as server:
        models = _models_file(tmp_path, server.url)
        given = str(models) if how == "flag" else None
        if how == "environment":
            monkeypatch.setenv("BEAVERTUI_MODELS", str(models))
        else:
            monkeypatch.delenv("BEAVERTUI_MODELS", raising=False)
        argv = ["live", "--task", "vec_scale", "--model", "team-coder", "--sessions-dir", str(tmp_path)]
        args: argparse.Namespace = build_parser().parse_args(
            [*argv, *(["--models-file", given] if given else [])]
        )
        from_live = live_command._model(args, task, protocol)
        from_branch = model_of(
            _parent_header(), BranchOptions(model="team-coder", models=given), protocol, task
        )
        if how == "flag":  # a batch reads the models file of the environment (its file lists the models)
            monkeypatch.setenv("BEAVERTUI_MODELS", str(models))
        from_batch = batch_model(ModelSpec(model="team-coder"), task, protocol)
        for model in (from_live, from_branch, from_batch):
            model.complete([Message(role="user", content="repair")])
    assert [r["model"] for r in server.requests] == ["coder-7b"] * 3
    assert [r["temperature"] for r in server.requests] == [0.4] * 3
    assert [h["authorization"] for h in server.headers] == ["Bearer sk-team-1"] * 3
    assert {m.info().base_url for m in (from_live, from_branch, from_batch)} == {server.url}
