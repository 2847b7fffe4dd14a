"""The protocol ``live`` runs under, picked by the service from a protocol file and the settings given."""

from __future__ import annotations

import pytest

from beavertui.engine.errors import BeaverError
from beavertui.service.live import live_protocol, swept_fields


def test_the_settings_pick_one_protocol_of_a_swept_file() -> None:
    assert swept_fields_of("paper-method") >= {"method"}
    p = live_protocol("paper-method", {"method": "repeated"})
    assert (p.method, p.temperature) == ("repeated", 1.0)
    with pytest.raises(BeaverError, match="2 of its protocols match the flags; pick one with --"):
        live_protocol("paper-method", {})


def test_settings_and_switches_override_the_picked_protocol() -> None:
    p = live_protocol(
        "paper", {"budget": 2, "temperature": 0.5}, continue_after_pass=True, stagnation_stop=False,
        sanitize=("memcheck", "memcheck"),
    )  # fmt: skip
    assert (p.budget, p.temperature, p.continue_after_pass, p.stagnation.stop) == (2, 0.5, True, False)
    assert p.sanitize_tools == ("memcheck",)
    assert live_protocol("paper", {}).stagnation.stop is True


def test_a_setting_the_protocol_refuses_is_named_by_its_flag() -> None:
    with pytest.raises(BeaverError, match=r"^--budget: "):
        live_protocol("paper", {"budget": 0})


def swept_fields_of(name: str) -> set[str]:
    from beavertui.batch.protocol_file import find_protocol_file

    return swept_fields(find_protocol_file(name))
