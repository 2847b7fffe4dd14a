"""One self-contained HTML page of a session or of a run, for sharing (``beavertui export ... --html``).

The page needs nothing but a browser: styles, script and figures are inside the file, a content security
policy forbids every load from the network, and it opens from a mail attachment. The session page and its
panes are in ``html_session``, the run page in ``html_run``, the page's shell in ``html_page`` (with the
styles and script of ``page.css`` and ``page.js``); this module is what the rest of beavertui imports.
"""

from __future__ import annotations

from html import escape

from beavertui.reports.html_page import CSP, page
from beavertui.reports.html_run import read_manifest, run_page, table_html
from beavertui.reports.html_session import (
    SessionDoc,
    badge,
    diff_html,
    highlighted_lines,
    load_session_doc,
    session_page,
    session_section,
    speedup_svg,
    whole_file,
)
from beavertui.reports.palette import colour, speed

__all__ = [
    "CSP",
    "SessionDoc",
    "badge",
    "colour",
    "diff_html",
    "escape",
    "highlighted_lines",
    "load_session_doc",
    "page",
    "read_manifest",
    "run_page",
    "session_page",
    "session_section",
    "speed",
    "speedup_svg",
    "table_html",
    "whole_file",
]
