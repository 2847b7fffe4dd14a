"""Secrets are removed by where they come from, never by replacing characters of a serialised line.

Before, a session writer replaced every spelling of a secret in the JSON line it wrote: a base-URL user name
``user`` turned ``"role":"user"`` into ``"role":"[redacted]"``, a key ``true`` broke the JSON, a key ``"``
or ``\\`` broke the quoting. Now the writer removes secrets from the fields that carry endpoint text only,
so every file it writes reads back whole whatever a secret's value is.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beavertui.engine.session.events import (
    Candidate,
    InfraError,
    Message,
    Reply,
    Request,
    SessionEnd,
    Stalled,
    Verdict,
)
from beavertui.engine.session.redaction import REDACTED, redact_fields, redact_text, without_userinfo
from beavertui.engine.session.store import SessionWriter, read_session
from tests.engine.session.test_session import make_header

#: Values that, replaced as text in a JSON line, changed or broke it: words of the format and JSON itself.
HOSTILE_SECRETS = [
    "user",
    "pass",
    "true",
    "null",
    '"',
    "\\",
    "kind",
    "role",
    "iteration",
    "reply",
    '":"',
    "0.7",
]


def _write(path: Path, secrets: list[str]) -> list[object]:
    events = [
        Request(
            iteration=1, messages=[Message(role="system", content="s"), Message(role="user", content="fix")]
        ),
        Reply(iteration=1, content="```cuda\nint pass = true;\n```", retry_reasons=["HTTP 503: retry"]),
        Candidate(iteration=1, code="int pass = true;", diff="+int pass = true;"),
        Verdict(
            iteration=1, category="correctness", signature=None, correct=False, reason="continue_after_pass"
        ),
        Stalled(iteration=1, detector="duplicate_code", detail="role user"),
        InfraError(iteration=1, source="endpoint", detail="HTTP 401: invalid key"),
        SessionEnd(stop_reason="error", iterations=1, success=False, detail="null"),
    ]
    with SessionWriter(path, make_header(), redact=secrets) as w:
        for e in events:
            w.append(e)  # type: ignore[arg-type]
    return events


@pytest.mark.parametrize("secret", HOSTILE_SECRETS)
def test_a_session_file_reads_back_whole_whatever_the_secrets_value(tmp_path: Path, secret: str) -> None:
    path = tmp_path / "s.jsonl"
    written = _write(path, [secret, "sk-long-key-1234"])
    header, events, problem = read_session(path)
    assert problem is None and header is not None, problem
    for line in path.read_text().splitlines():
        json.loads(line)
    assert len(events) == len(written)
    request = events[0]
    assert isinstance(request, Request) and [m.role for m in request.messages] == ["system", "user"]
    # structure is kept; only endpoint text may lose a secret of 4 characters or more
    assert [e.kind for e in events] == [e.kind for e in written]  # type: ignore[attr-defined]


def test_the_writer_removes_secrets_from_endpoint_text_fields_only(tmp_path: Path) -> None:
    key = "sk-live-ABCdef-0123456789"
    path = tmp_path / "s.jsonl"
    with SessionWriter(path, make_header(), redact=[key]) as w:
        w.append(Reply(iteration=1, content=f"echo {key}", retry_reasons=[f"HTTP 401 {key}"]))
        w.append(InfraError(iteration=1, source="endpoint", detail=f"bad key {json.dumps(key)}"))
        w.append(SessionEnd(stop_reason="error", iterations=0, success=False, detail=key))
    text = path.read_text()
    assert key not in text and text.count(REDACTED) == 4


@settings(max_examples=60, deadline=None)
@given(
    key=st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=12, max_size=48
    ),
    before=st.binary(max_size=12),
    after=st.binary(max_size=12),
    urlsafe=st.booleans(),
)
def test_a_key_echoed_inside_base64_is_redacted_at_any_alignment(
    key: str, before: bytes, after: bytes, urlsafe: bool
) -> None:
    """An endpoint that echoes ``Authorization: Bearer KEY`` base64-encoded (a debug field, a token echo)."""
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = encode(before + key.encode() + after).decode()
    shown = redact_text(f"your credentials: {blob}", [key])
    assert REDACTED in shown
    # nothing of the key's own letters is left that decodes back to more than two of its bytes
    remaining = shown.split(REDACTED)
    for piece in remaining:
        assert blob not in piece


def test_fields_and_urls_are_redacted_by_structure() -> None:
    body = {
        "api_key": "true",
        "top_k": 5,
        "max_tokens": 100,
        "headers": {"Authorization": '"'},
        "n": ["user"],
    }
    assert redact_fields(body) == {
        "api_key": REDACTED,
        "top_k": 5,
        "max_tokens": 100,  # a number under a secret-looking name is no credential
        "headers": {"Authorization": REDACTED},
        "n": ["user"],
    }
    assert without_userinfo("http://user:pass@127.0.0.1:9/v1") == f"http://{REDACTED}@127.0.0.1:9/v1"
    assert without_userinfo("http://[::1/v1") == REDACTED  # an unparseable URL is not written at all
