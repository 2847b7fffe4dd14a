"""Where a command may write a file it was asked for (``export -o``, ``metrics -o`` and ``--card``).

An output file is written whole or not at all (engine/fileio.py), but a whole file in the wrong place still
loses what was there: ``export RUN -o RUN/.../task__s0.jsonl`` would replace a recorded session with the
attempts table, ``export S.jsonl --html -o S.jsonl`` the session with its page, and a table written as
``RUN/attempts.jsonl`` would be read by every later ``metrics`` and ``browse`` of the run as a damaged session.
``check_output`` refuses those before anything is computed, in one line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from beavertui.engine.errors import BeaverError

#: A session file's first line names its kind at once (``{"t": ..., "kind": "header", ...``, any format
#: version, damaged or not); the first bytes are enough to tell it from any table or page.
_HEADER = re.compile(rb'^\s*\{[^\n]{0,200}?"kind"\s*:\s*"header"')
_PEEK_BYTES = 512


def _is_session(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return _HEADER.match(fh.read(_PEEK_BYTES)) is not None
    except OSError:  # not readable as a file: whoever writes it says why
        return False


def _inside(path: Path, folder: Path) -> bool:
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))
    except OSError:
        return False


def check_output(output: Path, source: Path, flag: str = "-o") -> None:
    """Refuse ``output`` (a file to write) when writing it would replace ``source`` or a session file, or
    drop a ``*.jsonl`` into the run folder ``source``, where later commands would take it for a session."""
    if output.exists() and source.exists():
        try:
            same = os.path.samefile(output, source)
        except OSError:
            same = False
        if same:
            raise BeaverError(
                f"{flag} {output}: is the input {source}; writing it would replace it: give another path"
            )
    if output.is_file() and _is_session(output):
        raise BeaverError(
            f"{flag} {output}: is a session file; writing over it would lose the session: give another path"
        )
    if source.is_dir() and output.name == "run.json" and _inside(output.parent, source):
        raise BeaverError(
            f"{flag} {output}: is a run's manifest; writing over it would lose the run: give another path"
        )
    if source.is_dir() and output.name.endswith(".jsonl") and _inside(output.parent, source):
        raise BeaverError(
            f"{flag} {output}: is inside the run folder {source}, where every later metrics, export and browse "
            "would read it as a damaged session: give a path outside it"
        )
