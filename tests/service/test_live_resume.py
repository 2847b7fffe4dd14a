"""service/live.py ``resumed_model`` / ``resumed_endpoint`` called directly, with no command line: the endpoint
a resumed session goes on with comes from its header and the models file in force; a given base URL and key
variable move where a call goes, a setting that would change what is asked is refused naming its flag. The
endpoint ``resumed_model`` checks is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from beavertui.engine.errors import BeaverError
from beavertui.engine.session.events import ModelInfo
from beavertui.engine.session.protocol import Protocol
from beavertui.service.live import flag_of, resumed_endpoint, resumed_model
from tests.engine.models.test_models_openai import ChatServer


@pytest.fixture(autouse=True)
def _no_models_file_in_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BEAVERTUI_MODELS", raising=False)
    monkeypatch.setattr("beavertui.engine.models.resolve.DEFAULT_MODELS_FILE", tmp_path / "no-such.toml")


def _entry(path: Path, url: str) -> Path:
    path.write_text(
        f'[models.coder]\nmodel = "m"\nbase_url = "{url}"\napi_key_env = "CODER_KEY"\nretries = 0\n'
    )
    return path


def test_the_entry_in_force_gives_the_endpoint_and_the_session_what_is_asked(tmp_path: Path) -> None:
    recorded = ModelInfo(
        name="m",
        kind="openai",
        entry="coder",
        base_url="http://old/v1",
        params={"temperature": 0.3, "seed": 7},
    )
    models = _entry(tmp_path / "models.toml", "http://entry/v1")
    config, entry = resumed_endpoint(recorded, tmp_path / "s.jsonl", models_file=models, base_url=None)
    assert (entry, config.model, config.base_url, config.api_key_env) == (
        "coder",
        "m",
        "http://entry/v1",
        "CODER_KEY",
    )
    assert (config.temperature, config.seed) == (0.3, 7)
    config, _ = resumed_endpoint(
        recorded, tmp_path / "s.jsonl", models_file=models, base_url="http://moved/v1"
    )
    assert config.base_url == "http://moved/v1"


def test_without_an_entry_the_header_is_the_endpoint_and_a_named_entry_must_be_found(tmp_path: Path) -> None:
    plain = ModelInfo(name="m", kind="openai", base_url="http://rec/v1", params={"top_p": 0.5, "seed": 3})
    config, entry = resumed_endpoint(plain, tmp_path / "s.jsonl", models_file=None, base_url=None)
    assert (entry, config.base_url, config.top_p, config.seed) == (None, "http://rec/v1", 0.5, 3)
    named = ModelInfo(name="m", kind="openai", entry="coder")
    with pytest.raises(
        BeaverError, match=r"s\.jsonl is a session of models-file entry coder, which no models file"
    ):
        resumed_endpoint(named, tmp_path / "s.jsonl", models_file=None, base_url=None)
    other = tmp_path / "other.toml"
    other.write_text('[models.else]\nmodel = "x"\n')
    with pytest.raises(
        BeaverError, match=rf"which {other} does not hold: give its file with --models-file FILE"
    ):
        resumed_endpoint(named, tmp_path / "s.jsonl", models_file=other, base_url=None)


def test_resumed_model_moves_the_transport_refuses_a_new_question_and_checks_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODER_KEY", "k-coder-1234")
    monkeypatch.setenv("OTHER_KEY", "k-other-5678")
    recorded = ModelInfo(name="m", kind="openai", entry="coder", params={"temperature": 0.0})
    protocol = Protocol()
    with ChatServer([], models=["m"]) as server:
        models = _entry(
            tmp_path / "models.toml", "http://127.0.0.1:9/v1"
        )  # the server moved: --base-url says
        moved = {"base_url": server.url, "api_key_env": "OTHER_KEY", "timeout_s": 5.0}
        model = resumed_model(
            recorded,
            tmp_path / "s.jsonl",
            models_file=models,
            overrides=moved,
            toolchain="demo",
            protocol=protocol,
        )
        info = model.info()
        assert (info.name, info.entry, info.base_url) == ("m", "coder", server.url)
        assert model.config.api_key_env == "OTHER_KEY" and model.config.timeout_s == 5.0
        with pytest.raises(BeaverError) as refused:
            resumed_model(
                recorded, tmp_path / "s.jsonl", models_file=models, overrides={**moved, "top_p": 0.9},
                toolchain="demo", protocol=protocol,
            )  # fmt: skip
    assert str(refused.value) == (
        f"--resume continues {tmp_path / 's.jsonl'}: --top-p would change what model m is asked "
        "(the session has None); drop --top-p"
    )
    assert flag_of("timeout_s") == "--timeout" and flag_of("extra_body") == "--extra-body"
