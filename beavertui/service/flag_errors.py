"""A protocol built from command-line options that fails validation, as the one-line error a user reads."""

from __future__ import annotations

from typing import Any

from beavertui.engine.errors import BeaverError


def protocol_error(exc: Any) -> BeaverError:
    """The first error of a pydantic ``ValidationError`` of a protocol: ``--flag: why`` for a field (named as its
    flag is spelt), ``protocol: why`` for a rule between fields."""
    err = exc.errors()[0]
    msg = str(err["msg"]).removeprefix("Value error, ")
    if not err.get("loc"):  # a rule between fields
        return BeaverError(f"protocol: {msg}")
    return BeaverError(f"--{str(err['loc'][0]).replace('_', '-')}: {msg}")
