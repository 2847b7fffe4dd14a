"""The shell of an exported HTML page: its content security policy, its styles and its script.

The styles and the script are the package's ``page.css`` and ``page.js``, written into every page, which
loads nothing from the network.
"""

from __future__ import annotations

from functools import cache
from html import escape
from importlib.resources import files

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


@cache
def _asset(name: str) -> str:
    return "\n" + files("beavertui.reports").joinpath(name).read_text(encoding="utf-8")


def page(title: str, body: str, *, run: bool) -> str:
    """A whole page around ``body``: a session's (``run`` False) or a run's."""
    css, js = _asset("page.css"), _asset("page.js")
    cls = ' class="run-page"' if run else ""
    return f"""<!DOCTYPE html>
<html lang="en"{cls}>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="beavertui">
<link rel="icon" href="data:,">
<title>{escape(title)}</title>
<style>{css}</style>
</head>
<body>
{body}
<script>{js}</script>
</body>
</html>
"""
