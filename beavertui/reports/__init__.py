"""Human-readable reports of the metrics: tables (terminal, Markdown, CSV, LaTeX), evaluation card, SVG plots.

Reports format numbers the engine computed; they never compute a metric themselves.
"""
