"""What ``beavertui live`` runs under: the protocol a protocol file and the given protocol settings pick, and
the endpoint model a resumed session is continued with.

``commands/live.py`` turns its flags into these arguments and prints; nothing here sees ``argparse``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beavertui.engine.errors import BeaverError
from beavertui.engine.session.protocol import Protocol
from beavertui.service.flag_errors import protocol_error

if TYPE_CHECKING:
    from beavertui.engine.models.openai_model import OpenAIConfig, OpenAIModel
    from beavertui.engine.session.events import ModelInfo

#: Command-line flag of each OpenAIConfig field the endpoint flags set (where the names differ).
FLAG_OF = {"timeout_s": "timeout", "extra_body": "extra-body"}


def flag_of(field: str) -> str:
    """The command-line flag of an OpenAIConfig field, e.g. ``timeout_s`` -> ``--timeout``."""
    return "--" + FLAG_OF.get(field, field).replace("_", "-")


def swept_fields(pfile: Path) -> set[str]:
    """Fields a protocol file varies (its sweep axes and its variants' fields)."""
    from beavertui.batch.protocol_file import load_batch_file

    spec = load_batch_file(pfile)
    return set(spec.sweep) | {k for v in spec.variants for k in v}


#: Protocol fields that say where data is, not which protocol: they override the file's, never pick one.
DATA_FIELDS = frozenset({"few_shot_pool", "few_shot_curated"})


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
        if all(
            getattr(p.protocol, k) == v for k, v in settings.items() if k in swept and k not in DATA_FIELDS
        )
    ]
    if len(candidates) != 1:
        raise BeaverError(
            f"{pfile}: {len(candidates) or 'none'} of its protocols match the flags; "
            f"pick one with --{' / --'.join(sorted(swept - DATA_FIELDS) or ['method']).replace('_', '-')}"
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
        raise protocol_error(exc) from None


def resumed_model(
    recorded: ModelInfo,
    session: Path,
    *,
    models_file: Path | None,
    overrides: Mapping[str, Any],
    toolchain: str,
    protocol: Protocol,
) -> OpenAIModel:
    """The endpoint model a session of endpoint model ``recorded`` (its header's ModelInfo) goes on with
    (``live --resume``), checked (key, endpoint, model, toolchain) before anything is written.

    ``overrides``: the endpoint flags given, as OpenAIConfig fields. Where and how a call goes may change on a
    resume (as for batch: ``TRANSPORT``); what is asked is the session's, and a flag that would change it is
    refused in one line naming it.
    """
    from beavertui.engine.models.openai_model import OpenAIModel
    from beavertui.service.batch_prepare import TRANSPORT
    from beavertui.service.preflight import Endpoint, preflight

    config, entry = resumed_endpoint(
        recorded, session, models_file=models_file, base_url=overrides.get("base_url")
    )
    if overrides.get("api_key_env"):
        config = config.model_copy(update={"api_key_env": overrides["api_key_env"]})
    for name, value in overrides.items():
        if name not in TRANSPORT and getattr(config, name, None) != value:
            raise BeaverError(
                f"--resume continues {session}: {flag_of(name)} would change what model {config.model} "
                f"is asked (the session has {getattr(config, name, None)!r}); drop {flag_of(name)}"
            )
    config = config.model_copy(update={k: v for k, v in overrides.items() if k in TRANSPORT})
    preflight([Endpoint(label=config.model, config=config)], toolchain, [protocol])
    return OpenAIModel(config, entry=entry)


def resumed_endpoint(
    recorded: ModelInfo, session: Path, *, models_file: Path | None, base_url: str | None
) -> tuple[OpenAIConfig, str | None]:
    """The endpoint of a resumed session's model, and the models-file entry that names it: the entry in force
    (``models_file``, else ``$BEAVERTUI_MODELS``, else ``~/.config/beavertui/models.toml``), as ``live``
    found it, for where a call goes, its key variable, transport and prices; the session's temperature and
    seed as recorded. Without an entry, the endpoint the header recorded. ``base_url`` (given) wins over both.
    """
    from beavertui.engine.models.openai_model import OpenAIConfig, load_models_file
    from beavertui.engine.models.resolve import models_file as models_file_in_force

    name = recorded.entry or recorded.name
    path = models_file_in_force(models_file)
    found = (load_models_file(path) if path is not None else {}).get(name)
    if found is not None:
        asked = {k: recorded.params[k] for k in ("temperature", "seed") if recorded.params.get(k) is not None}
        return found.model_copy(
            update={**asked, "base_url": base_url or found.base_url or recorded.base_url}
        ), name
    if recorded.entry:
        where = (
            path
            or "no models file in force holds (--models-file, $BEAVERTUI_MODELS, ~/.config/beavertui/models.toml)"
        )
        raise BeaverError(
            f"{session} is a session of models-file entry {recorded.entry}, which {where}"
            + (" does not hold" if path else "")
            + ": give its file with --models-file FILE"
        )
    known = set(OpenAIConfig.model_fields) - {"model", "base_url", "api_key_env"}
    params = {k: v for k, v in recorded.params.items() if k in known}
    return OpenAIConfig(model=recorded.name, base_url=base_url or recorded.base_url, **params), None
