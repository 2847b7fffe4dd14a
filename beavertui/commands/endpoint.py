"""The endpoint options of every command that asks a model: ``live``, ``batch``, ``branch``, ``attribute``.

Declared once here so that a flag means the same everywhere: ``--base-url``, ``--api-key-env`` and
``--models-file`` say where a model is and how to reach it; the sampling and call flags override the
models file's entry field by field (an unset flag keeps the entry's value). ``--models`` is only
``batch``'s list of model names; ``--models FILE`` of ``branch`` and ``attribute`` is still read, with a
line saying it is now ``--models-file``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from beavertui.commands.numbers import float_in, int_in
from beavertui.engine.limits import MAX_RETRIES, MAX_TIMEOUT_S, MAX_TOKENS, MAX_TOP_P


def add_endpoint_options(p: argparse.ArgumentParser, *, deprecated_models: bool = False) -> None:
    """The endpoint group; ``deprecated_models``: also read the old ``--models FILE`` spelling."""
    g = p.add_argument_group(
        "endpoint (an OpenAI-compatible server; each flag overrides the models file's entry of the model)"
    )
    g.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (default: the models file's, "
        "else $OPENAI_BASE_URL, else the OpenAI API)",
    )
    g.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY); a local server at "
        "--base-url needs none",
    )
    g.add_argument(
        "--models-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="TOML models file of [models.NAME] tables (default: $BEAVERTUI_MODELS, else "
        "~/.config/beavertui/models.toml)",
    )
    if deprecated_models:
        g.add_argument("--models", dest="models_file_old", type=Path, default=None, help=argparse.SUPPRESS)
    g.add_argument(
        "--top-p",
        type=float_in(0, MAX_TOP_P, above=True),
        default=None,
        metavar="P",
        help="nucleus sampling mass",
    )
    g.add_argument(
        "--max-tokens", type=int_in(1, MAX_TOKENS), default=None, metavar="N", help="completion token limit"
    )
    g.add_argument("--reasoning-effort", default=None, choices=("low", "medium", "high"))
    g.add_argument("--extra-body", default=None, metavar="JSON", help="extra request fields as a JSON object")
    g.add_argument(
        "--timeout",
        type=float_in(0, MAX_TIMEOUT_S, above=True, unit="seconds"),
        default=None,
        metavar="S",
        help="per-call time limit, seconds (default 600)",
    )
    g.add_argument(
        "--retries",
        type=int_in(0, MAX_RETRIES),
        default=None,
        metavar="N",
        help="failed tries allowed per call (default 5)",
    )
    g.add_argument("--no-stream", action="store_true", help="do not stream tokens")


def models_file_of(args: argparse.Namespace) -> Path | None:
    """``--models-file``, or the old ``--models FILE`` spelling with a line saying so."""
    old = getattr(args, "models_file_old", None)
    if old is not None:
        print(
            "beavertui: --models FILE is now --models-file FILE (--models lists model names)", file=sys.stderr
        )
        if args.models_file is None:
            return Path(old)
    return Path(args.models_file) if args.models_file is not None else None


def endpoint_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given, as OpenAIConfig fields (unset flags left out)."""
    from beavertui.engine.errors import BeaverError

    overrides: dict[str, Any] = {
        "base_url": args.base_url,
        "api_key_env": args.api_key_env,
        "top_p": args.top_p,
        "max_tokens": args.max_tokens,
        "reasoning_effort": args.reasoning_effort,
        "timeout_s": args.timeout,
        "retries": args.retries,
    }
    if args.extra_body:
        try:
            extra = json.loads(args.extra_body)
        except json.JSONDecodeError as exc:
            raise BeaverError(f"--extra-body: not JSON: {exc.msg}") from None
        if not isinstance(extra, dict):
            raise BeaverError("--extra-body: expected a JSON object")
        overrides["extra_body"] = extra
    if args.no_stream:
        overrides["stream"] = False
    return {k: v for k, v in overrides.items() if v is not None}
