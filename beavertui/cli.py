"""Command-line entry point: parse, build engine objects, hand over to one front end. Nothing else.

Each subcommand lives in ``beavertui/commands/<name>.py`` and exposes ``register(subparsers)``; the
module does its heavy imports inside its handler so that ``beavertui --help`` and the TUI start fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from beavertui import __version__
from beavertui.commands.numbers import Bounded, GpuList
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


class RangeHelp(argparse.HelpFormatter):
    """Help that gives each bounded number's range after its text: ``trajectories ... [1 to 1,000]``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if isinstance(action.type, Bounded | GpuList) and text != argparse.SUPPRESS:
            return f"{text} [{action.type.text()}]".lstrip()
        return action.help


class Parser(argparse.ArgumentParser):
    """The parser of beavertui and of each command (subparsers take their parent's class): a refused
    command line is one line on stderr, exit status 2, as every other bad input is."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", RangeHelp)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        message = "".join(
            c if c.isprintable() else ascii(c)[1:-1] for c in message
        )  # no escape reaches a terminal
        argument = re.fullmatch(r"argument ([^:]+): (.*)", message)
        if argument and argument[2].startswith("must be "):  # a bounded number (commands/numbers.py)
            self.exit(2, f"beavertui: {argument[1]} {argument[2]}\n")
        text = f"{argument[1]}: {argument[2]}" if argument else message
        self.exit(2, f"beavertui: {text} ({self.prog} --help lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``beavertui batch``...), or ``parser`` itself when there is none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]  # type: ignore[no-any-return]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # refused by the command's parser, so that the line points at that command's --help
            _command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # --help, --version (0), or a command line refused in one line (2)
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
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
    except OSError as exc:
        if exc.filename is None:  # not a file of the command's: a bug, shown whole
            raise
        return _file_error(exc)
    except Exception as exc:
        from beavertui.engine.models.base import EndpointError  # imported here: --help loads no pydantic

        if not isinstance(exc, EndpointError):
            raise
        print(f"beavertui: endpoint: {exc.detail}", file=sys.stderr)
        return EXIT_INFRA
    return int(rc or 0)


#: What to do about a file error, by its errno; the failures of the disk itself exit with status 3.
_FILE_FIXES = {
    errno.EROFS: "the file system is read-only: give a path on another one",
    errno.EACCES: "permission denied: give a path this user may read (or a folder it may write)",
    errno.EPERM: "operation not permitted: give a path this user may read (or a folder it may write)",
    errno.ENOTDIR: "a part of the path is a file, not a folder: give another path",
    errno.EEXIST: "a part of the path is a file, not a folder: give another path",
    errno.EISDIR: "is a folder: give a file's path",
    errno.ENOENT: "no such file or folder",
    errno.ELOOP: "a symbolic link loop",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EIO: "input/output error (a failing disk?)",
}
_STORAGE_FAULTS = {errno.ENOSPC, errno.EDQUOT, errno.EIO}


def _file_error(exc: OSError) -> int:
    """A file or folder a command could not read or write, that nothing nearer turned into words: one line
    naming it and what to do, exit status 2 (3 for a full or failing disk), never a traceback."""
    reason = _FILE_FIXES.get(exc.errno or 0) or exc.strerror or type(exc).__name__
    print(f"beavertui: {exc.filename}: {reason}", file=sys.stderr)
    return EXIT_INFRA if exc.errno in _STORAGE_FAULTS else EXIT_BAD_INPUT
