"""Protocol files: a TOML description of a batch (base protocol, a sweep, models, samples).

```toml
name = "feedback"
samples = 1                      # independent trajectories per (task, protocol, model)
[protocol]                       # any field of beavertui.engine.session.protocol.Protocol
budget = 5
gate = 0.7
[sweep]                          # cross product of every listed axis
feedback = ["L0", "L1", "L2", "L3", "L4"]
[[variants]]                     # optional: protocols that differ in several fields at once; the batch
method = "iterative"             # runs each variant (over the base) times the sweep
temperature = 0.7
[[variants]]
method = "repeated"
temperature = 1.0
[[pairings]]                     # optional: named comparisons across more than one axis, reported by
name = "method"                  # `beavertui metrics` as their own swing and Kendall entries
a = { method = "iterative", temperature = 0.7 }
b = { method = "repeated", temperature = 1.0 }
[[models]]                       # one endpoint each, as in `beavertui live`
model = "scripted:vec_scale_demo.toml"
```

This module parses and expands; it runs nothing and never reads an API key.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beavertui.engine.errors import BeaverError
from beavertui.engine.fileio import read_small_text
from beavertui.engine.limits import MAX_RETRIES, MAX_SAMPLES, MAX_TIMEOUT_S, MAX_TOKENS, MAX_TOP_P
from beavertui.engine.session.events import GivenName
from beavertui.engine.session.protocol import Protocol, few_shot_label

#: A protocol file larger than this is refused before it is parsed.
MAX_PROTOCOL_BYTES = 1 << 20

#: Folder of the protocol files shipped with the package (``--protocol NAME`` finds them by name).
BUNDLED_DIR = Path(__file__).resolve().parents[1] / "protocols"
#: Bundled files renamed: the earlier default protocol and its sweeps are ``legacy*.toml`` (``paper.toml`` is
#: the default). The old names still load, with a note.
RENAMED = {
    "default": "legacy",
    "feedback": "legacy-feedback",
    "gate": "legacy-gate",
    "history": "legacy-history",
    "method": "legacy-method",
}


class ModelSpec(BaseModel):
    """One model under test: an endpoint (OpenAI-compatible) or a scripted model."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    model: GivenName
    """Endpoint model name, ``scripted:FILE``, ``scripted:@reference`` (see models.py) or ``replay:SESSION``."""
    label: GivenName | None = None
    """Name used in the run directory and tables; default: ``model``."""
    base_url: str | None = None
    """Endpoint base URL (OpenAI-compatible); None: OPENAI_BASE_URL or the OpenAI API."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key (the key itself never appears in a file)."""
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    """Calls in flight at once to this endpoint."""
    top_p: float | None = Field(default=None, gt=0.0, le=MAX_TOP_P)
    """Nucleus sampling mass."""
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    """Completion token limit."""
    reasoning_effort: str | None = None
    """``low``, ``medium`` or ``high`` for reasoning models."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Extra JSON fields of every request."""
    timeout_s: float = Field(default=600.0, gt=0.0, le=MAX_TIMEOUT_S)
    """Per-call time limit."""
    retries: int = Field(default=5, ge=0, le=MAX_RETRIES)
    """Failed tries allowed per call before the session records an infrastructure error."""
    scripts: str | None = None
    """Scripted models: a folder with one script per task (``<task_id>.toml|.json|.md``)."""
    input_usd_per_mtok: float | None = Field(default=None, ge=0)
    """Price of prompt tokens, US dollars per million (give both prices to see costs)."""
    output_usd_per_mtok: float | None = Field(default=None, ge=0)
    """Price of completion tokens (reasoning included), US dollars per million."""
    stream: bool = True
    """Stream tokens as they are generated."""
    models_file: str | None = None
    """Models file whose ``[models.NAME]`` entry this model starts from; None: ``$BEAVERTUI_MODELS`` or
    ``~/.config/beavertui/models.toml`` (the fields above, where set, override the entry's)."""

    @property
    def name(self) -> str:
        return self.label or self.model

    @classmethod
    def named(cls, name: str) -> ModelSpec:
        """The model a name alone gives (``--models``), refused in one line where the name cannot be one."""
        try:
            return cls(model=name)
        except ValidationError as exc:
            raise BeaverError(f"model {name!r}: {exc.errors()[0]['msg']}") from None


class BatchFile(BaseModel):
    """The TOML file as written."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = "batch"
    """Short name of the batch (used in the run id)."""
    description: str = ""
    """What the batch measures."""
    departures: list[str] = Field(default_factory=list)
    """Where this protocol departs from the CUDABeaver paper's (one line each; empty: it does not)."""
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    """Independent trajectories per (model, protocol, task)."""
    protocol: dict[str, Any] = Field(default_factory=dict)
    """Base protocol: fields of beavertui.engine.session.protocol.Protocol."""
    sweep: dict[str, list[Any]] = Field(default_factory=dict)
    """Axis -> values; the batch runs the cross product, every other field from ``protocol``."""
    variants: list[dict[str, Any]] = Field(default_factory=list)
    """Protocol overrides run one by one (each times the sweep): for protocols that differ in several
    fields together, such as iterative T = 0.7 against repeated T = 1.0."""
    pairings: list[PairingSpec] = Field(default_factory=list)
    """Named comparisons across more than one axis, reported by ``beavertui metrics``."""
    models: list[ModelSpec] = Field(default_factory=list)
    """Models under test (``--models`` replaces them)."""
    tasks: str | None = None
    """Glob of task ids (``--tasks`` replaces it)."""
    corpus: str | None = None
    """Corpus path (``--corpus`` replaces it); default: the bundled corpus."""
    retries: int = Field(default=1, ge=0, le=10)
    """Times a session ended by an infrastructure failure is retried before it is reported and skipped."""


class PairingSpec(BaseModel):
    """A named comparison of two protocols that differ in more than one field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: GivenName
    """The axis name the comparison is reported under."""
    a: dict[str, Any]
    """Protocol-object fields of the first side (the delta is b minus a)."""
    b: dict[str, Any]
    """Protocol-object fields of the second side."""


@dataclass(frozen=True)
class NamedProtocol:
    """One expanded protocol with its folder name in the run directory."""

    slug: str
    protocol: Protocol


def pairings_of(spec: BatchFile) -> list[dict[str, Any]]:
    """The file's pairings as plain objects (kept in run.json for ``beavertui metrics``)."""
    return [p.model_dump() for p in spec.pairings]


def protocol_slug(p: Protocol) -> str:
    """Readable and unique folder name: ``iterative-K5-L3-H4-T0.7-p0.7-<hash>``."""
    # a setting added since slugs were first made counts only away from its default, so that a run's
    # folders keep their names
    extra = {"run_limit"} if p.run_limit == "reference" else None
    digest = hashlib.sha256(p.model_dump_json(exclude=extra).encode()).hexdigest()[:8]
    plan = "" if p.planning == "implicit" else ("-planF" if p.coder_feedback else "-planNF")
    shots = "" if p.few_shot == "none" else f"-{few_shot_label(p.few_shot, p.few_shot_k, p.few_shot_seed)}"
    return f"{p.method}{plan}-K{p.budget}-{p.feedback}-H{p.history}-T{p.temperature:g}-p{p.gate:g}{shots}-{digest}"


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    return f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg"))


def expand(spec: BatchFile, where: str = "protocol file") -> list[NamedProtocol]:
    """The cross product of the sweep over the base protocol, in file order."""
    axes = list(spec.sweep)
    for axis in axes:
        if axis not in Protocol.model_fields:
            raise BeaverError(f"{where}: [sweep] {axis}: not a protocol field")
        if not spec.sweep[axis]:
            raise BeaverError(f"{where}: [sweep] {axis}: no values")
    for n, variant in enumerate(spec.variants, 1):
        for field in variant:
            if field not in Protocol.model_fields:
                raise BeaverError(f"{where}: [[variants]] {n}: {field}: not a protocol field")
    for pairing in spec.pairings:
        known = set(Protocol().key())
        for side in (pairing.a, pairing.b):
            for field in side:
                if field not in known:
                    raise BeaverError(f"{where}: pairing {pairing.name}: {field}: not a protocol key")
    out: list[NamedProtocol] = []
    seen: set[str] = set()
    for variant, values in itertools.product(
        spec.variants or [{}], itertools.product(*(spec.sweep[a] for a in axes))
    ):
        fields = {**spec.protocol, **variant, **dict(zip(axes, values, strict=True))}
        try:
            p = Protocol.model_validate(fields)
        except ValidationError as exc:
            raise BeaverError(f"{where}: protocol {json.dumps(fields)}: {_first_error(exc)}") from None
        slug = protocol_slug(p)
        if slug not in seen:
            seen.add(slug)
            out.append(NamedProtocol(slug, p))
    return out


def find_protocol_file(spec: str) -> Path:
    """A path, or the name of a bundled protocol file (with or without ``.toml``)."""
    path = Path(spec)
    if os.path.lexists(path) and not path.is_dir():
        return path  # load_batch_file says what is wrong with it, if anything
    for candidate in (BUNDLED_DIR / spec, BUNDLED_DIR / f"{spec}.toml"):
        if candidate.is_file():
            return candidate
    renamed = RENAMED.get(spec.removesuffix(".toml"))
    if renamed is not None:
        print(f"beavertui: protocol {spec} is now called {renamed}; the old name will go", file=sys.stderr)
        return BUNDLED_DIR / f"{renamed}.toml"
    names = ", ".join(sorted(p.stem for p in BUNDLED_DIR.glob("*.toml")))
    raise BeaverError(f"{spec}: no such protocol file (bundled: {names})")


def load_batch_file(path: Path) -> BatchFile:
    try:
        data = tomllib.loads(read_small_text(path, MAX_PROTOCOL_BYTES))
    except OSError as exc:
        raise BeaverError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise BeaverError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise BeaverError(f"{path}: not valid TOML: nested too deeply") from None
    if not data:  # read as every default, an empty file would run the paper's protocol as if chosen
        raise BeaverError(
            f"{path}: no settings at all (is it the right file?): a protocol file holds a [protocol] table "
            "of protocol fields, and may add name, samples, [sweep], [[variants]], [[pairings]] and [[models]]"
        )
    try:
        return BatchFile.model_validate(data)
    except ValidationError as exc:
        raise BeaverError(f"{path}: {_first_error(exc)}") from None


Executor = Literal["local", "ray"]
