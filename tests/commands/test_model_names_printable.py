"""A model name, label or pairing name holding a terminal control character is refused where it comes in.

The session header refuses such a name (an escape sequence would reach every viewer's terminal); before these
checks, ``live --model`` with one was a traceback once the endpoint answered, and ``batch`` made its run folder,
failed every session at its header and exited 2, while a pairing's name reached the metrics table as is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.batch.protocol_file import ModelSpec, load_batch_file
from beavertui.engine.errors import BeaverError
from beavertui.engine.models.openai_model import load_models_file
from beavertui.engine.models.resolve import endpoint_config
from tests.cli_in_process import run_cli
from tests.loopback_endpoint import Endpoint, completion

ESC = "\x1b[31m"
#: The same, as a TOML string writes it (a raw control character is no valid TOML).
TOML_ESC = "\\u001b[31m"


@pytest.mark.parametrize(
    "text",
    [
        f'[protocol]\nbudget = 2\n[[models]]\nmodel = "scripted:@demo"\nlabel = "a{TOML_ESC}b"\n',
        f'[protocol]\nbudget = 2\n[[models]]\nmodel = "m{TOML_ESC}"\n',
        f'[protocol]\nbudget = 2\n[sweep]\nfeedback = ["L3", "L2"]\n[[pairings]]\nname = "p{TOML_ESC}"\n'
        'a = { feedback = "L3" }\nb = { feedback = "L2" }\n',
    ],
)
def test_a_protocol_file_with_a_control_character_in_a_name_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BeaverError, match="terminal control character"):
        load_batch_file(path)


def test_a_models_file_entry_and_a_name_given_alone_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(f'[models.a]\nmodel = "x{TOML_ESC}"\n', encoding="utf-8")
    with pytest.raises(BeaverError, match=r"models\.a\.model: .*terminal control character"):
        load_models_file(path)
    with pytest.raises(BeaverError, match=r"terminal control character"):
        ModelSpec.named(f"m{ESC}")
    with pytest.raises(BeaverError, match=r"terminal control character"):
        endpoint_config(f"m{ESC}", models=None)


def test_batch_with_such_a_model_writes_no_run_folder(tmp_path: Path) -> None:
    out = run_cli(
        "batch", "--models", f"scripted:@d{ESC}emo", "--toolchain", "demo", "--tasks", "softmax_00",
        "--sessions-dir", tmp_path / "s", "--quiet",
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "terminal control character" in out.stderr and "\x1b" not in out.stderr
    assert not (tmp_path / "s").exists()


def test_live_with_such_an_endpoint_model_is_one_line_before_anything_is_written(tmp_path: Path) -> None:
    with Endpoint(lambda model, body, headers: ("json", completion(model, "no code"))) as ep:
        out = run_cli(
            "live", "--model", f"m{ESC}", "--base-url", ep.url, "--toolchain", "demo", "--task", "softmax_00",
            "--headless", "--out", tmp_path / "s.jsonl",
        )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "\x1b" not in out.stderr
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize(
    "text",
    [
        '[protocol]\nbudget = 2\n[[models]]\nmodel = "scripted:@demo"\nlabel = ""\n',
        '[protocol]\nbudget = 2\n[[models]]\nmodel = ""\n',
    ],
)
def test_an_empty_model_name_in_a_protocol_file_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BeaverError, match="at least 1 character"):
        load_batch_file(path)


def test_an_empty_model_name_is_refused_before_a_run_folder(tmp_path: Path) -> None:
    """``--models ''`` (an unset shell variable) made a run folder and sent model "" to the endpoint."""
    models = tmp_path / "models.toml"
    models.write_text('[models.a]\nmodel = ""\n', encoding="utf-8")
    with pytest.raises(BeaverError, match=r"models\.a\.model: .*at least 1 character"):
        load_models_file(models)
    with pytest.raises(BeaverError, match="at least 1 character"):
        ModelSpec.named("")
    with pytest.raises(BeaverError, match="a model name is empty"):
        endpoint_config("", models=None)
    with Endpoint(lambda model, body, headers: ("json", completion(model, "no code"))) as ep:
        out = run_cli(
            "batch", "--models", "", "--base-url", ep.url, "--toolchain", "demo", "--tasks", "softmax_00",
            "--sessions-dir", tmp_path / "s", "--quiet",
        )  # fmt: skip
        assert not ep.requests
    assert out.returncode == 2 and "at least 1 character" in out.stderr, out.stderr
    assert not (tmp_path / "s").exists()


def test_a_pairing_name_with_a_control_character_in_run_json_is_not_shown(tmp_path: Path) -> None:
    """run.json keeps the pairings of the protocol file, which refuses such a name; a run.json that holds one
    anyway (damaged, or written by hand) no longer sends it to the terminal."""
    import json

    from beavertui.service.metrics import load_pairings

    (tmp_path / "run.json").write_text(
        json.dumps(
            {
                "pairings": [
                    {"name": f"x{ESC}", "a": {"feedback": "L3"}, "b": {"feedback": "L2"}},
                    {"name": "", "a": {"feedback": "L3"}, "b": {"feedback": "L2"}},
                    {"name": "kept", "a": {"feedback": "L3"}, "b": {"feedback": "L2"}},
                ]
            }
        )
    )
    assert [p.name for p in load_pairings(tmp_path, None)] == ["kept"]
