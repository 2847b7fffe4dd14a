#!/usr/bin/env python3
"""Which endpoint faults end in a usable reply: beavertui's own retries against the openai SDK's.

    python3 bench/retry_compare.py

Each fault of tests/engine/models/test_endpoint_faults.py (a real TCP server on 127.0.0.1 that resets, closes, hangs,
answers 5xx/429, or answers 200 with nothing usable in it) is served once, then a good reply. Both sides
allow one retry and stop at 0.2 s per try:

- ``beavertui``: OpenAIModel (engine/models/openai_model.py) with ``retries=1``;
- ``sdk``: the same request through ``openai.OpenAI(max_retries=1)``, the reply read as OpenAIModel reads
  it (no choices, an empty content or an empty stream count as no reply).

A case is recovered when the call returns the good reply. Prints one line per case and the totals.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beavertui.engine.models.base import EndpointError  # noqa: E402
from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel  # noqa: E402
from beavertui.engine.session.events import Message  # noqa: E402
from tests.engine.models.test_endpoint_faults import CASES, FAULTS, FaultServer  # noqa: E402

GOOD = "```cuda\nint fixed;\n```"
MESSAGES = [Message(role="user", content="fix")]


def ours(url: str, stream: bool) -> bool:
    config = OpenAIConfig(
        model="m",
        base_url=url,
        stream=stream,
        timeout_s=0.2,
        retries=1,
        backoff_base_s=0.01,
        backoff_max_s=0.02,
    )
    try:
        return "int fixed" in OpenAIModel(config, api_key="sk-x").complete(MESSAGES).content
    except EndpointError:
        return False


def sdk(url: str, stream: bool) -> bool:
    import openai

    client = openai.OpenAI(api_key="sk-x", base_url=url, timeout=0.2, max_retries=1)
    try:
        response: Any = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "fix"}], stream=stream
        )
        if not stream:
            return bool(response.choices) and "int fixed" in (response.choices[0].message.content or "")
        text = "".join(c.choices[0].delta.content or "" for c in response if c.choices and c.choices[0].delta)
        return "int fixed" in text
    except (openai.OpenAIError, ValueError):
        return False


def main() -> int:
    totals = {"beavertui": 0, "sdk": 0}
    for name, stream in CASES:
        behaviour = FAULTS[name][0]
        row = []
        for side, call in (("beavertui", ours), ("sdk", sdk)):
            with FaultServer({"m": [behaviour, ("ok", GOOD)]}) as server:
                ok = call(server.url, stream)
            totals[side] += ok
            row.append(f"{side} {'recovered' if ok else 'FAILED'}")
        print(f"{name:<17} {'stream' if stream else 'plain':<6}  " + "  ".join(row))
    print(f"recovered of {len(CASES)}: beavertui {totals['beavertui']}, sdk {totals['sdk']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
