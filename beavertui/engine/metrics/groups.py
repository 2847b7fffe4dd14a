"""The key of a metrics group: (model, corpus name, protocol)."""

from __future__ import annotations

from collections.abc import Mapping

from beavertui.engine.metrics.table import ProtocolKey

GroupKey = tuple[str, str, ProtocolKey]
"""(model, corpus name, protocol object): a metrics group (docs/metrics.md)."""


def group_key(model: str, protocol: Mapping[str, object], corpus: str | None = None) -> GroupKey:
    """The key of a (model, corpus, protocol) group, from a protocol's ``key()`` dict (or a ProtocolKey's)."""
    return (model, corpus or "", ProtocolKey.from_mapping(protocol))
