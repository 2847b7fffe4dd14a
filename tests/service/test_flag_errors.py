"""A protocol built from options that fails validation reads as one line naming the flag as it is spelt."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from beavertui.engine.session.protocol import Protocol
from beavertui.service.flag_errors import protocol_error


def _error(fields: dict[str, object]) -> str:
    with pytest.raises(ValidationError) as caught:
        Protocol.model_validate(fields)
    return str(protocol_error(caught.value))


def test_a_field_is_named_as_its_flag() -> None:
    assert _error({"history": -1}).startswith("--history: ")
    # a field with an underscore is its flag with a dash (the branch command once said --sanitize_tools)
    assert _error({"sanitize_tools": 5}).startswith("--sanitize-tools: ")


def test_a_rule_between_fields_names_the_protocol() -> None:
    msg = _error({"summariser": "m"})
    assert msg == 'protocol: a summariser needs feedback = "L3S"'
