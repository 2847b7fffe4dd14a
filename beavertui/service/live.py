"""What ``beavertui live`` runs under: the protocol a protocol file and the given protocol settings pick.

``commands/live.py`` turns its flags into these arguments and prints; nothing here sees ``argparse``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from beavertui.engine.errors import BeaverError
from beavertui.engine.session.protocol import Protocol


def swept_fields(pfile: Path) -> set[str]:
    """Fields a protocol file varies (its sweep axes and its variants' fields)."""
    from beavertui.batch.protocol_file import load_batch_file

    spec = load_batch_file(pfile)
    return set(spec.sweep) | {k for v in spec.variants for k in v}


def live_protocol(
    name: str,
    settings: Mapping[str, Any],
    *,
    continue_after_pass: bool = False,
    self_source: bool = False,
    stagnation_stop: bool = True,
    sanitize: Sequence[str] = (),
) -> Protocol:
    """The protocol of the protocol file ``name`` (a bundled name or a path) that agrees with ``settings``
    (Protocol field -> value) on every field the file sweeps, with ``settings`` and the switches applied.

    Refused in one line (``BeaverError``) when not exactly one of the file's protocols agrees, or when the
    result breaks a rule of Protocol; a field's problem is named by its flag (``--field-name``).
    """
    from pydantic import ValidationError

    from beavertui.batch.protocol_file import expand, find_protocol_file, load_batch_file
    from beavertui.engine.session.protocol import StagnationSettings

    pfile = find_protocol_file(name)
    swept = swept_fields(pfile)
    # the file's protocols that agree with every setting on a swept field; the other settings override
    candidates = [
        p.protocol
        for p in expand(load_batch_file(pfile), str(pfile))
        if all(getattr(p.protocol, k) == v for k, v in settings.items() if k in swept)
    ]
    if len(candidates) != 1:
        raise BeaverError(
            f"{pfile}: {len(candidates) or 'none'} of its protocols match the flags; "
            f"pick one with --{' / --'.join(sorted(swept) or ['method'])}"
        )
    base = candidates[0]
    fields = {**base.model_dump(), **settings}
    if continue_after_pass:
        fields["continue_after_pass"] = True
    if self_source:
        fields["self_source"] = True
    if not stagnation_stop:
        fields["stagnation"] = StagnationSettings(**{**base.stagnation.model_dump(), "stop": False})
    if sanitize:
        fields["sanitize_tools"] = tuple(dict.fromkeys(sanitize))
    try:
        return Protocol.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        if not err.get("loc"):  # a rule between fields
            raise BeaverError(f"protocol: {msg}") from None
        raise BeaverError(f"--{str(err['loc'][0]).replace('_', '-')}: {msg}") from None
