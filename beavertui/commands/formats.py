"""The one ``--format`` flag of every command that prints a table, and how a command reads it."""

from __future__ import annotations

import argparse

from beavertui.reports import ALIASES, FORMATS


def add_format_argument(parser: argparse.ArgumentParser, json_means: str) -> None:
    """``--format table|md|csv|latex|json`` (``--json`` stays as the short form of ``--format json``)."""
    parser.add_argument(
        "--format",
        type=lambda s: ALIASES.get(s.lower(), s.lower()),
        choices=FORMATS,
        default=None,
        help=f"table (fitted to the terminal; the default), md, csv, latex, or json ({json_means})",
    )
    parser.add_argument("--json", action="store_true", help="the same as --format json")


def output_format(args: object) -> str:
    """The format asked for, with ``--json`` read as ``--format json``; ``--json`` with another
    ``--format`` is refused (one of the two would be dropped)."""
    from beavertui.engine.errors import BeaverError

    fmt = getattr(args, "format", None)
    if getattr(args, "json", False):
        if fmt not in (None, "json"):
            raise BeaverError(f"--json and --format {fmt} are two formats: give one")
        return "json"
    return str(fmt or "table")
