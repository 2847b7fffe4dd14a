"""Command-line entry point: parse, build engine objects, hand over to one front end. Nothing else.

Each subcommand lives in ``beavertui/commands/<name>.py`` and exposes ``register(subparsers)``; the
module does its heavy imports inside its handler so that ``beavertui --help`` and the TUI start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from beavertui import __version__
from beavertui.engine.errors import (
    EXIT_BAD_INPUT,
    EXIT_INFRA,
    EXIT_INTERRUPTED,
    EXIT_STATUS_HELP,
    BeaverError,
    ToolchainError,
)

#: Subcommand modules, in the order --help lists them.
COMMANDS = (
    "browse",
    "live",
    "replay",
    "compare",
    "check",
    "classify",
    "corpus",
    "batch",
    "export",
    "import_",
    "metrics",
    "branch",
    "attribute",
    "reproduce",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="beavertui",
        description="Evaluate and watch language models repair broken CUDA kernels.",
        epilog=EXIT_STATUS_HELP,
    )
    parser.add_argument("--version", action="version", version=f"beavertui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"beavertui.commands.{name}").register(sub)
    for command in sub.choices.values():  # every --help ends with the exit statuses
        command.epilog = EXIT_STATUS_HELP
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["browse"])
    try:
        rc = args.func(args)
    except ToolchainError as exc:  # the machine's or the toolchain's failure, not the input's
        print(f"beavertui: {exc}", file=sys.stderr)
        return EXIT_INFRA
    except BeaverError as exc:
        print(f"beavertui: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("beavertui: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as exc:
        from beavertui.engine.models.base import EndpointError  # imported here: --help loads no pydantic

        if not isinstance(exc, EndpointError):
            raise
        print(f"beavertui: endpoint: {exc.detail}", file=sys.stderr)
        return EXIT_INFRA
    return int(rc or 0)
