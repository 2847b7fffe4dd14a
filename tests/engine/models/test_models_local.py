"""Scripted, replay and human models on their own."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from beavertui.engine.errors import BeaverError
from beavertui.engine.models.base import EndpointError, StopRequested
from beavertui.engine.models.human import HumanModel
from beavertui.engine.models.scripted import ScriptedModel, load_script
from beavertui.engine.session.events import Message

ASK = [Message(role="user", content="Your solution failed: out of bounds.")]


def test_script_formats(tmp_path: Path) -> None:
    toml = tmp_path / "r.toml"
    toml.write_text('[[reply]]\ncontent = "one"\n[[reply]]\nerror = "HTTP 503"\n')
    assert [(e.content, e.error) for e in load_script(toml)] == [("one", None), (None, "HTTP 503")]
    js = tmp_path / "r.json"
    js.write_text('{"replies": ["a", {"content": "b"}]}')
    assert [e.content for e in load_script(js)] == ["a", "b"]
    md = tmp_path / "r.md"
    md.write_text("<!-- demo -->\n<!-- reply -->\nfirst\n```cuda\nx\n```\n<!-- reply -->\nsecond\n")
    assert [e.content for e in load_script(md)] == ["first\n```cuda\nx\n```\n", "second\n"]
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    with pytest.raises(BeaverError, match="each reply must be a string"):
        load_script(bad)


def test_scripted_model_runs_out_and_fails_on_error_entries(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('[[reply]]\ncontent = "one"\n[[reply]]\nerror = "HTTP 503"\n')
    model = ScriptedModel.from_file(path)
    assert model.complete(ASK).content == "one"
    with pytest.raises(EndpointError, match="HTTP 503"):
        model.complete(ASK)
    with pytest.raises(EndpointError, match="has no reply 3 \\(it holds 2\\)"):
        model.complete(ASK)
    assert model.info().name == "scripted:r.toml"


def test_builtin_demo_script_loads() -> None:
    entries = load_script("vec_scale_demo.toml")
    assert len(entries) == 3 and all(e.content and "```cuda" in e.content for e in entries)


def test_human_model_each_save_is_an_attempt(tmp_path: Path) -> None:
    path = tmp_path / "solution.cu"
    model = HumanModel(path, initial="int broken;\n", poll_ms=50)
    assert path.read_text() == "int broken;\n"

    def save_later() -> None:
        time.sleep(0.3)
        path.write_text("int fixed;\n")

    threading.Thread(target=save_later).start()
    result = model.complete(ASK)
    assert result.code == "int fixed;\n"
    assert model.feedback_path.read_text() == "Your solution failed: out of bounds."


def test_human_model_never_takes_a_save_half_written(tmp_path: Path) -> None:
    """An editor that saves in place empties the file, then writes it: the model never returns the empty file,
    however long it stays empty (here for several of the model's looks)."""
    path = tmp_path / "solution.cu"
    model = HumanModel(path, initial="int broken;\n", poll_ms=20)

    def save_in_place() -> None:
        time.sleep(0.1)
        with path.open("w") as f:  # truncated now
            f.flush()
            time.sleep(0.3)
            f.write("int fixed;\n")

    threading.Thread(target=save_in_place).start()
    assert model.complete(ASK).code == "int fixed;\n"


def test_human_model_stops_when_asked(tmp_path: Path) -> None:
    stop = threading.Event()
    model = HumanModel(tmp_path / "s.cu", initial="x", stop=stop, poll_ms=50)
    threading.Timer(0.2, stop.set).start()
    with pytest.raises(StopRequested):
        model.complete(ASK)


def test_human_model_with_an_editor_command(tmp_path: Path) -> None:
    editor = f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w').write('int edited;')\""
    model = HumanModel(tmp_path / "s.cu", initial="int broken;", editor=editor)
    assert model.complete(ASK).code == "int edited;"
