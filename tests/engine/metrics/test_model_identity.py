"""A model is its models-file entry plus every setting that changes its output, not the endpoint name alone.

Before, headers recorded only the endpoint model name, so two entries sending one endpoint model at two
reasoning efforts were one group: pass@1 0 and pass@k 100% instead of 100% and 0%.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from beavertui.engine.session.events import ModelInfo, model_identity
from tests.cli_in_process import run_cli
from tests.loopback_endpoint import Endpoint, completion

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "tests" / "data" / "recorded"
TOOLCHAIN = f"recorded:{RECORDED / 'vec_scale.recordings.jsonl'}"
REFERENCE = (RECORDED / "vec_scale" / "candidates" / "reference.cu").read_text()


def _by_effort(model: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[str, Any]:
    text = f"```cuda\n{REFERENCE}\n```" if body.get("reasoning_effort") == "high" else "I cannot fix it."
    return "json", completion(model, text)


@pytest.fixture(scope="module")
def two_efforts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two models-file entries sending one endpoint model at two reasoning efforts, one session each, and
    ``metrics --json`` of them."""
    tmp_path = tmp_path_factory.mktemp("efforts")
    with Endpoint(_by_effort) as server:
        models = tmp_path / "models.toml"
        models.write_text(
            f"[models.deep]\nmodel = 'gpt-x'\nbase_url = '{server.url}'\nreasoning_effort = 'high'\nstream = false\n"
            f"[models.fast]\nmodel = 'gpt-x'\nbase_url = '{server.url}'\nreasoning_effort = 'low'\nstream = false\n"
        )
        for entry in ("deep", "fast"):
            argv = ["live", "--task", "vec_scale", "--corpus", str(RECORDED), "--model", entry, "--models-file",
                    str(models), "--headless", "--toolchain", TOOLCHAIN, "--budget", "1", "--temperature", "0"]  # fmt: skip
            env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-x"}
            p = run_cli(*argv, cwd=tmp_path, env=env)  # live's entry point: test_secrets_in_files.py
            assert p.returncode in (0, 1), p.stderr
        assert {b.get("reasoning_effort") for _m, b, _h in server.requests} == {"high", "low"}
    m = run_cli("metrics", tmp_path / "sessions" / "live", "--json")
    assert m.returncode == 0, m.stderr
    return {g["model"]: g for g in json.loads(m.stdout)["groups"]}


DEEP, FAST = "deep [model=gpt-x, reasoning_effort=high]", "fast [model=gpt-x, reasoning_effort=low]"


def test_two_entries_of_one_endpoint_model_at_two_efforts_are_two_groups(two_efforts: dict[str, Any]) -> None:
    groups = {model: (g["pass@1"], g["pass@k"]) for model, g in two_efforts.items()}
    assert groups == {DEEP: (1.0, 1.0), FAST: (0.0, 0.0)}


def test_the_analysis_columns_group_by_the_identity_the_rates_use(two_efforts: dict[str, Any]) -> None:
    """The degeneration and repair analysis of a group is its own sessions' (were grouped by the endpoint
    name: no group of the rates found its cells, so the repair of ``deep`` was analysed nowhere)."""
    deep, fast = two_efforts[DEEP], two_efforts[FAST]
    assert deep["analysed_repairs"] == 1
    assert (deep["edit_precision"], deep["bug_recall"]) == (1.0, 1.0)  # the reference: the whole fix
    assert fast["analysed_repairs"] == 0
    assert (fast["edit_precision"], fast["bug_recall"]) == (None, None)


def test_old_headers_without_an_identity_are_told_apart_by_their_settings() -> None:
    low = ModelInfo(name="gpt-x", kind="openai", params={"temperature": 0.7, "reasoning_effort": "low"})
    high = ModelInfo(name="gpt-x", kind="openai", params={"temperature": 0.7, "reasoning_effort": "high"})
    plain = ModelInfo(name="gpt-x", kind="openai", params={"temperature": 0.7, "stream": True, "retries": 5})
    assert model_identity(low) != model_identity(high)
    assert model_identity(plain) == "gpt-x"  # settings that change no output are not part of it
    assert model_identity(ModelInfo(name="scripted:demo.toml", kind="scripted")) == "scripted:demo.toml"
    # a header read back keeps what it recorded
    read = ModelInfo.model_validate_json(high.model_copy(update={"identity": "recorded"}).model_dump_json())
    assert model_identity(read) == "recorded"


def test_the_batch_summary_keeps_two_entries_of_one_endpoint_model_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table at the end of a batch grouped its sessions by the endpoint name: two models-file entries of
    one endpoint model (one repairs, one does not; one priced, one not) were one row, 'gpt-x', sessions 2/2,
    passed 1, the priced one's cost over both. They are two rows now, named as metrics names them."""
    from beavertui.cli import main

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BEAVERTUI_MODELS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with Endpoint(_by_effort) as server:
        models = tmp_path / "models.toml"
        models.write_text(
            f"[models.deep]\nmodel = 'gpt-x'\nbase_url = '{server.url}'\nreasoning_effort = 'high'\n"
            "input_usd_per_mtok = 1.0\noutput_usd_per_mtok = 1.0\n"
            f"[models.fast]\nmodel = 'gpt-x'\nbase_url = '{server.url}'\nreasoning_effort = 'low'\n"
        )
        rc = main(["batch", "--models-file", str(models), "--models", "deep", "fast", "--corpus", str(RECORDED),
                   "--tasks", "vec_scale", "--toolchain", TOOLCHAIN, "--no-stream", "--protocol", "legacy",
                   "--run-id", "two", "--no-reply-cache", "--json"])  # fmt: skip
        out = capsys.readouterr().out
    assert rc == 0
    rows = {
        g["model"]: (g["sessions"], g["passed"], g["cost_usd"] is None) for g in json.loads(out)["groups"]
    }
    assert rows == {DEEP: (1, 1, False), FAST: (1, 0, True)}, rows
