"""The bundled protocol files: the paper's default, one file per axis of the paper, and their departures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beavertui.batch.protocol_file import BUNDLED_DIR, expand, find_protocol_file, load_batch_file
from beavertui.batch.rundir import read_manifest
from beavertui.engine.errors import BeaverError
from beavertui.engine.session.protocol import Protocol
from tests.batch.test_batch import batch


def protocols(name: str) -> list[Protocol]:
    return [p.protocol for p in expand(load_batch_file(find_protocol_file(name)))]


def test_paper_is_the_papers_default_and_the_class_default() -> None:
    (p,) = protocols("paper")
    assert (p.method, p.budget, p.feedback, p.history, p.temperature, p.gate, p.gate_mode) == (
        "iterative", 5, "L3", 4, 0.7, 0.7, "after_run",
    )  # fmt: skip
    assert p == Protocol()
    assert p.stagnation.stop and len(p.stagnation.enabled) == 4
    assert protocols("paper-gate") == [p]  # the p axis needs this one run only


def test_one_file_per_axis_of_the_paper() -> None:
    assert [(p.method, p.temperature) for p in protocols("paper-method")] == [
        ("iterative", 0.7),
        ("repeated", 1.0),
    ]
    assert [p.feedback for p in protocols("paper-feedback")] == ["L0", "L1", "L2", "L3", "L3_raw"]
    assert [p.history for p in protocols("paper-history")] == [1, 2, 3, 4]
    assert [p.gate_mode for p in protocols("in-loop")] == ["after_run", "in_loop"]
    for name in ("paper-method", "paper-feedback", "paper-history", "in-loop"):
        for p in protocols(name):
            rest = p.model_copy(update={"method": "iterative", "temperature": 0.7, "feedback": "L3", "history": 4,
                                        "gate_mode": "after_run"})  # fmt: skip
            assert rest == Protocol(), name  # every other field is the paper's default
    fewshot = protocols("paper-fewshot")
    assert [p.key()["few_shot"] for p in fewshot] == [
        f"{s}_K{k}" for s in ("matched", "random", "curated") for k in (1, 3, 5)
    ]
    for p in fewshot:
        assert p.few_shot_pool == (
            "evaluation/outputs/gemma4/20260424_123214",
            "evaluation/outputs/glm_4_7/20260424_151941",
        )
        assert (p.few_shot_curated is not None) == (p.few_shot == "curated")
        rest = p.model_copy(
            update={"few_shot": "none", "few_shot_k": 0, "few_shot_pool": (), "few_shot_curated": None}
        )
        assert rest == Protocol(), p.key()  # every other field is the paper's default
    (pairing,) = load_batch_file(find_protocol_file("paper-method")).pairings
    assert (pairing.name, pairing.a, pairing.b) == (
        "method", {"method": "iterative", "temperature": 0.7}, {"method": "repeated", "temperature": 1.0},
    )  # fmt: skip


def test_every_bundled_file_says_where_it_departs_from_the_paper() -> None:
    names = sorted(p.stem for p in BUNDLED_DIR.glob("*.toml"))
    assert {"paper", "paper-gate", "paper-method", "paper-feedback", "paper-history", "in-loop"} <= set(names)
    for name in names:
        spec = load_batch_file(find_protocol_file(name))
        assert spec.departures, f"{name}.toml lists no departures"
    # the files kept from before say they are not the paper's protocol
    for name in ("legacy", "legacy-gate", "legacy-method", "legacy-feedback", "legacy-history"):
        assert all(p.gate_mode == "in_loop" for p in protocols(name))
        assert any("inside the loop" in d for d in load_batch_file(find_protocol_file(name)).departures)


def test_the_earlier_names_of_the_legacy_files_still_load_with_a_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """default.toml and its sweeps became legacy*.toml: the old names give the same protocols, and say so."""
    for old, new in (("default", "legacy"), ("gate", "legacy-gate"), ("method.toml", "legacy-method"),
                     ("feedback", "legacy-feedback"), ("history", "legacy-history")):  # fmt: skip
        assert find_protocol_file(old) == BUNDLED_DIR / f"{new}.toml"
        assert (
            capsys.readouterr().err
            == f"beavertui: protocol {old} is now called {new}; the old name will go\n"
        )
        assert load_batch_file(find_protocol_file(new)).name == new
    assert capsys.readouterr().err == ""  # the new names say nothing
    with pytest.raises(BeaverError, match="no such protocol file"):
        find_protocol_file("legacy-gait")


def test_unknown_fields_of_variants_and_pairings_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[variants]]\nmethd = "repeated"\n')
    with pytest.raises(BeaverError, match=r"\[\[variants\]\] 1: methd: not a protocol field"):
        expand(load_batch_file(bad), str(bad))
    bad.write_text('[[pairings]]\nname = "x"\na = { tempreature = 1.0 }\nb = { method = "repeated" }\n')
    with pytest.raises(BeaverError, match="pairing x: tempreature: not a protocol key"):
        expand(load_batch_file(bad), str(bad))


def test_batch_runs_the_paper_protocol_by_default_and_keeps_the_pairings(tmp_path: Path) -> None:
    assert batch(tmp_path, "--run-id", "p") == 0
    (entry,) = read_manifest(tmp_path / "p").protocols
    assert entry.protocol == Protocol()
    assert (
        batch(tmp_path, "--run-id", "m", "--protocol", "paper-method", "--models", "scripted:@reference") == 0
    )
    manifest = json.loads((tmp_path / "m" / "run.json").read_text())
    assert manifest["pairings"] == [
        {
            "name": "method",
            "a": {"method": "iterative", "temperature": 0.7},
            "b": {"method": "repeated", "temperature": 1.0},
        }
    ]
    # metrics reads the pairing from run.json and reports it with its signed delta
    from beavertui.service.metrics import compute

    report = compute(tmp_path / "m")
    (entry,) = [e for e in report.swing if e["from"] == "pairing"]
    assert entry["axis"] == "method" and entry["delta"] == pytest.approx(0.0)
    assert entry["values"] == {
        "method=iterative temperature=0.7": 1.0,
        "method=repeated temperature=1.0": 1.0,
    }


@pytest.mark.parametrize(
    "text", ["", "\n\n", "# the paper's grid, to fill in\n"], ids=["empty", "blank", "comments"]
)
def test_a_protocol_file_with_no_settings_is_refused_in_one_line(tmp_path: Path, text: str) -> None:
    """An empty file (the wrong file, or one not yet written) was run as the paper's protocol without a word."""
    from tests.cli_in_process import run_cli

    empty = tmp_path / "grid.toml"
    empty.write_text(text)
    p = run_cli(
        "batch", "--demo", "--protocol", empty, "--run-id", "r", "--sessions-dir", tmp_path, cwd=tmp_path
    )
    assert p.returncode == 2, (p.returncode, p.stderr[-400:])
    assert p.stderr == (
        f"beavertui: {empty}: no settings at all (is it the right file?): a protocol file holds a [protocol] "
        "table of protocol fields, and may add name, samples, [sweep], [[variants]], [[pairings]] and [[models]]\n"
    )
    assert not (tmp_path / "r").exists()
    # one setting is enough: the rest are the defaults, as documented
    (tmp_path / "one.toml").write_text("[protocol]\nbudget = 3\n")
    assert load_batch_file(tmp_path / "one.toml").protocol == {"budget": 3}
