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
        default="table",
        help=f"table (fitted to the terminal; the default), md, csv, latex, or json ({json_means})",
    )
    parser.add_argument("--json", action="store_true", help="the same as --format json")


def output_format(args: object) -> str:
    """The format asked for, with ``--json`` read as ``--format json``."""
    fmt = str(getattr(args, "format", "table") or "table")
    return "json" if getattr(args, "json", False) else fmt
