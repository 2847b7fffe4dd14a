"""Credentials kept out of everything beavertui shows or writes, by where they come from.

A secret is known by its source: the API key, the user info of a base URL, the values of secret fields of a
request's extra body or headers. It is removed *structurally*:

- from the fields that hold it (``without_userinfo`` for a URL, ``redact_fields`` for a JSON body: a secret
  field's value becomes ``[redacted]``), before a header, ``run.json`` or a reply-cache entry is built;
- from the text an endpoint sends back (a reply, an error, a retry reason), where it may be echoed in any
  spelling (as is, JSON-escaped, URL-encoded, or inside base64 such as an echoed ``Authorization`` header):
  ``Secrets.text`` replaces those spellings in that *text*, before it becomes an event;
- from the free-text fields of an event that carry endpoint text (``redact_event``), a last line of defence
  that acts on field values, so a file is valid JSON and valid events whatever a secret's value is.

Nothing here ever replaces characters of serialised JSON: a base-URL user name ``user`` cannot turn
``"role":"user"`` into something else, and a key ``true`` or ``"`` cannot break a line.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

REDACTED = "[redacted]"

#: Field names whose string values are credentials, in a request's extra body or headers.
SECRET_FIELD = re.compile(r"key|token|secret|passw|auth|cred|bearer|cookie", re.I)

#: Secrets shorter than this are not searched for in free text: replacing every ``a1`` of a reply would
#: change the code a model wrote, and so short a value protects nothing. Fields that hold a secret are
#: redacted whatever its length.
MIN_TEXT_SECRET = 4

#: Base64 of a secret is searched for only when the part of it that does not depend on its neighbours has at
#: least this many characters (a shorter run of base64 letters occurs in ordinary text by chance).
MIN_BASE64_CORE = 8


def _base64_cores(secret: str) -> set[str]:
    """The runs of base64 letters that appear in *any* base64 text encoding bytes that contain ``secret``.

    Base64 encodes 3 bytes as 4 letters; where the secret starts inside a group decides how its first and
    last bytes mix with their neighbours. For each of the three alignments, the secret's bytes from the first
    whole group to the last whole group encode to the same letters whatever surrounds them. Standard and
    URL-safe alphabets, padded or not (padding only follows the last group, which is left out).
    """
    raw = secret.encode("utf-8")
    cores: set[str] = set()
    for skip in range(3):
        part = raw[skip:]
        part = part[: len(part) - len(part) % 3]
        if not part:
            continue
        core = base64.b64encode(part).decode("ascii")
        if len(core) >= MIN_BASE64_CORE:
            cores.add(core)
            cores.add(base64.urlsafe_b64encode(part).decode("ascii"))
    return cores


def spellings(secret: str) -> set[str]:
    """Every way ``secret`` may appear in a text an endpoint sends back."""
    if len(secret) < MIN_TEXT_SECRET:
        return set()
    found = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
    }
    return {s for s in found if len(s) >= MIN_TEXT_SECRET} | _base64_cores(secret)


@dataclass(frozen=True)
class Secrets:
    """The credentials of one model, and how to keep them out of text."""

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, values: Iterable[str]) -> Secrets:
        return cls(tuple(dict.fromkeys(v for v in values if v)))

    def __bool__(self) -> bool:
        return bool(self.values)

    def _spellings(self) -> list[str]:
        found: set[str] = set()
        for v in self.values:
            found |= spellings(v)
        return sorted(found, key=len, reverse=True)

    def text(self, text: str) -> str:
        """``text`` (endpoint output, never JSON being written) with every spelling of every secret replaced."""
        for s in self._spellings():
            if s in text:
                text = text.replace(s, REDACTED)
        return text


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every spelling of each secret (see ``spellings``) replaced by [redacted]."""
    return Secrets.of(secrets).text(text)


def redact_fields(body: Any, name: str = "") -> Any:
    """A JSON value with every string under a secret-looking field name (nested objects and lists too)
    replaced: ``{"api_key": "sk-.."}`` keeps its shape, ``{"max_tokens": 5}`` keeps its number."""
    if isinstance(body, dict):
        return {k: redact_fields(v, str(k)) for k, v in body.items()}
    if isinstance(body, list):
        return [redact_fields(v, name) for v in body]
    if isinstance(body, str) and name and SECRET_FIELD.search(name):
        return REDACTED
    return body


def has_redactions(value: Any) -> bool:
    """Whether a JSON value or URL holds a ``[redacted]`` left by ``redact_fields`` or ``without_userinfo``."""
    if isinstance(value, str):
        return REDACTED in value
    if isinstance(value, dict):
        return any(has_redactions(v) for v in value.values())
    if isinstance(value, list):
        return any(has_redactions(v) for v in value)
    return False


def secret_values(body: Any, name: str = "") -> list[str]:
    """The string values under secret-looking field names of a JSON value."""
    if isinstance(body, dict):
        return [v for k, item in body.items() for v in secret_values(item, str(k))]
    if isinstance(body, list):
        return [v for item in body for v in secret_values(item, name)]
    if isinstance(body, str) and name and SECRET_FIELD.search(name):
        return [body]
    return []


def userinfo_secrets(url: str | None) -> list[str]:
    """The password of a URL's user info, and the Basic credentials an HTTP client makes of it."""
    if not url:
        return []
    try:
        parts = urllib.parse.urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    found = [urllib.parse.unquote(password)] if password else []
    if user is not None:  # sent as Basic credentials, which a server may echo
        pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password or '')}"
        found.append(base64.b64encode(pair.encode()).decode())
        if password:
            found.append(password)  # as written in the URL (percent-encoded)
    return found


def without_userinfo(url: str | None) -> str | None:
    """The URL with any ``user:password@`` replaced by ``[redacted]@``."""
    if not url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return REDACTED
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{REDACTED}@{host}"))


E = TypeVar("E")

#: Event kind -> its fields that carry text an endpoint sent back (or a failure's description of it).
ENDPOINT_TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "reply": ("content", "retry_reasons"),
    "plan": ("content", "retry_reasons"),
    "summary": ("content", "retry_reasons"),
    "infra_error": ("detail",),
    "end": ("detail",),
}


def redact_event(event: E, secrets: Secrets) -> E:
    """``event`` with the secrets removed from its endpoint-text fields (a copy; the same object when none)."""
    kind = getattr(event, "kind", None)
    fields = ENDPOINT_TEXT_FIELDS.get(kind or "", ())
    if not secrets or not fields:
        return event
    update: dict[str, Any] = {}
    for name in fields:
        value = getattr(event, name, None)
        if isinstance(value, str):
            new: Any = secrets.text(value)
        elif isinstance(value, list):
            new = [secrets.text(v) if isinstance(v, str) else v for v in value]
        else:
            continue
        if new != value:
            update[name] = new
    if not update:
        return event
    return event.model_copy(update=update)  # type: ignore[attr-defined, no-any-return]
