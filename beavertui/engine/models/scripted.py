"""A model whose replies are written in a file: drives the loop in tests and demos without an endpoint.

Formats, by extension: ``.toml`` (``[[reply]]`` tables with ``content`` or ``error``), ``.json`` (a list of
strings or of such objects, or ``{"replies": [...]}``) and ``.md``/``.txt`` (replies separated by lines
reading exactly ``<!-- reply -->``; a part holding only HTML comments is a preamble). An ``error`` entry makes that call fail as an unreachable endpoint, so
demos can show an infrastructure failure. Replies are returned in order; running out is an EndpointError.
This module must not look at the messages it is sent beyond counting calls.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import MAX_INPUT_BYTES, read_small_text
from beavertui.engine.models.base import Completion, DeltaCallback, EndpointError
from beavertui.engine.session.events import Message, ModelInfo

SEPARATOR = "<!-- reply -->"
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)

#: Script files shipped with the package, addressable as ``scripted:NAME``.
BUILTIN_DIR = Path(__file__).parent / "scripts"


@dataclass(frozen=True)
class ScriptEntry:
    """One prepared call: a reply, or an endpoint failure."""

    content: str | None = None
    error: str | None = None


def _entry(item: Any, where: str) -> ScriptEntry:
    if isinstance(item, str):
        return ScriptEntry(content=item)
    if isinstance(item, dict) and isinstance(item.get("content"), str):
        return ScriptEntry(content=item["content"])
    if isinstance(item, dict) and isinstance(item.get("error"), str):
        return ScriptEntry(error=item["error"])
    raise BeaverError(f"{where}: each reply must be a string or have 'content' or 'error'")


def load_script(path: str | Path) -> list[ScriptEntry]:
    """Read a script file (see the module docstring for the formats)."""
    path = Path(path)
    if not path.is_file() and (BUILTIN_DIR / path.name).is_file() and not path.parent.parts:
        path = BUILTIN_DIR / path.name
    text = read_small_text(path, MAX_INPUT_BYTES, "script file")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BeaverError(f"{path}: not valid TOML: {exc}") from None
        except RecursionError:
            raise BeaverError(f"{path}: not valid TOML: nested too deeply") from None
        items = data.get("reply")
        if not isinstance(items, list):
            raise BeaverError(f"{path}: expected [[reply]] tables")
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BeaverError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
        except RecursionError:
            raise BeaverError(f"{path}: not valid JSON: nested too deeply") from None
        items = data.get("replies") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise BeaverError(f"{path}: expected a list of replies or {{'replies': [...]}}")
    else:
        parts = [p.strip("\n") for p in _split(text)]
        items = [p + "\n" for p in parts if _COMMENT.sub("", p).strip()]
    entries = [_entry(item, f"{path} reply {i + 1}") for i, item in enumerate(items)]
    if not entries:
        raise BeaverError(f"{path}: holds no replies")
    return entries


def _split(text: str) -> list[str]:
    parts: list[str] = [""]
    for line in text.splitlines(keepends=True):
        if line.strip() == SEPARATOR:
            parts.append("")
        else:
            parts[-1] += line
    return parts


class ScriptedModel:
    """Returns prepared replies in order, streaming each in a few pieces."""

    def __init__(self, entries: Sequence[ScriptEntry | str], *, name: str = "scripted") -> None:
        self.entries = [ScriptEntry(content=e) if isinstance(e, str) else e for e in entries]
        self.name = name
        self.calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        return cls(load_script(path), name=f"scripted:{Path(path).name}")

    def info(self) -> ModelInfo:
        return ModelInfo(name=self.name, kind="scripted", params={"replies": len(self.entries)})

    def secrets(self) -> tuple[str, ...]:
        return ()

    def resume_at(self, calls: int) -> None:
        """Continue a resumed session: the first ``calls`` replies were already used."""
        self.calls = calls

    def complete(self, messages: Sequence[Message], *, on_delta: DeltaCallback | None = None) -> Completion:
        if self.calls >= len(self.entries):
            raise EndpointError(f"{self.name} has no reply {self.calls + 1} (it holds {len(self.entries)})")
        entry = self.entries[self.calls]
        self.calls += 1
        if entry.error is not None:
            raise EndpointError(entry.error)
        content = entry.content or ""
        if on_delta is not None:
            step = max(1, len(content) // 4)
            for i in range(0, len(content), step):
                on_delta(content[i : i + step])
        return Completion(content=content, finish_reason="stop")
