"""Human-readable reports of the metrics: tables (terminal, Markdown, CSV, LaTeX), evaluation card, SVG plots.

Reports format numbers the engine computed; they never compute a metric themselves.
"""

#: The formats every command that prints a table offers (``--format``), and the names they also answer to.
FORMATS = ("table", "md", "csv", "latex", "json")
ALIASES = {"markdown": "md", "tex": "latex"}
