"""Candidate code by content: the key of Candidate.sha256 and of the recorded toolchain's recordings.

``normalise`` drops what cannot change behaviour (comments and spacing in C, C++ and CUDA; trailing space and
blank lines everywhere) and ``code_hash`` is the sha256 of the result. The stagnation detectors never compare
this hash: they compare the code exactly as submitted (loop/stagnation.py ``submitted_hash``).
"""

from __future__ import annotations

import hashlib
import re

_C_TOKEN = re.compile(
    r'"(?:\\.|[^"\\\n])*"'  # string literal
    r"|'(?:\\.|[^'\\\n])*'"  # char literal
    r"|//[^\n]*"  # line comment
    r"|/\*.*?\*/",  # block comment
    re.DOTALL,
)


def _drop_c_comments(code: str) -> str:
    def keep(m: re.Match[str]) -> str:
        text = m.group(0)
        return " " if text.startswith("/") else text

    return _C_TOKEN.sub(keep, code)


def normalise(code: str, language: str = "cuda") -> str:
    """Code with differences that cannot change behaviour removed.

    All languages: line endings unified, trailing whitespace and blank lines dropped. C, C++ and CUDA:
    comments removed and runs of spaces and tabs folded to one (indentation means nothing there).
    Python keeps its indentation and comments.
    """
    code = code.replace("\r\n", "\n").replace("\r", "\n")
    if language != "python":
        code = _drop_c_comments(code)
        lines = [" ".join(line.split()) for line in code.split("\n")]
    else:
        lines = [line.rstrip() for line in code.split("\n")]
    return "\n".join(line for line in lines if line.strip()) + "\n"


def code_hash(code: str, language: str = "cuda") -> str:
    """sha256 (hex) of the normalised code."""
    return hashlib.sha256(normalise(code, language).encode("utf-8")).hexdigest()
