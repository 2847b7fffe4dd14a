"""Rendering report tables: terminal (fit.py), Markdown, CSV and LaTeX booktabs.

Every format shows the same numbers: rates as percentages with one decimal and their interval.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import IO

from beavertui.engine.csv_cells import Writer
from beavertui.reports import ALIASES, FORMATS  # noqa: F401 - the formats emit() writes
from beavertui.reports.cells import Cell, Rate, Table, pct


def _plain(c: Cell) -> str:
    return pct(c) if isinstance(c, Rate) else c


def markdown(tables: Sequence[Table]) -> str:
    out = []
    for t in tables:
        out.append(f"### {t.title}\n")
        out.append("| " + " | ".join(t.columns) + " |")
        out.append("|" + "|".join("---" for _ in t.columns) + "|")
        for row in t.rows:
            out.append("| " + " | ".join(_plain(c).replace("|", "\\|") for c in row) + " |")
        if t.note:
            out.append(f"\n{t.note}")
        out.append("")
    return "\n".join(out)


def csv_text(tables: Sequence[Table]) -> str:
    """One table as CSV (a CSV file holds one table, so that one ``csv`` or pandas read takes it whole);
    several tables are refused: write them one per file (``csv_files``)."""
    if len(tables) != 1:
        from beavertui.engine.errors import BeaverError

        names = ", ".join(t.slug for t in tables)
        raise BeaverError(
            f"CSV holds one table and there are {len(tables)} ({names}): pick one with --table NAME, "
            "or give -o a folder for one CSV file per table"
        )
    return csv_table(tables[0])


def csv_files(tables: Sequence[Table]) -> dict[str, str]:
    """One CSV text per table, by file name (``<name>.csv``; a repeated name gets ``_2``, ``_3``...)."""
    out: dict[str, str] = {}
    for t in tables:
        name, n = t.slug, 1
        while f"{name}.csv" in out:
            n += 1
            name = f"{t.slug}_{n}"
        out[f"{name}.csv"] = csv_table(t)
    return out


def csv_table(t: Table) -> str:
    """A header and the rows, nothing else (the title and note are not CSV); a rate is three columns
    (%, low, high; in percentage points where the column's name ends with ``(pp)``), and a fourth (``exact`` or ``lower_bound``) in a column where some rate is a lower
    bound. A text cell that a spreadsheet would run as a formula gets a leading quote (engine/csv_cells.py);
    numbers are written as they are."""
    buf = io.StringIO()
    w = Writer(buf)
    rate_cols = {i for i, _ in enumerate(t.columns) if any(isinstance(r[i], Rate) for r in t.rows)}
    bound_cols = {
        i
        for i in rate_cols
        if any(isinstance(r[i], Rate) and r[i].lower_bound for r in t.rows)  # type: ignore[union-attr]
    }
    header: list[str] = []
    for i, name in enumerate(t.columns):
        # a rate is a percentage; a column that names its own unit (a swing: percentage points) keeps it
        base, unit = (name[:-5], "(pp)") if name.endswith(" (pp)") else (name, "(%)")
        header += (
            [f"{base} {unit}", f"{base} low {unit}", f"{base} high {unit}"] if i in rate_cols else [name]
        )
        header += [f"{base} bound"] if i in bound_cols else []
    w.writerow(header)
    for row in t.rows:
        line: list[str] = []
        for i, c in enumerate(row):
            if i in rate_cols and isinstance(c, Rate):
                line += [_num(c.value), _num(c.lo), _num(c.hi)]
                line += ["lower_bound" if c.lower_bound else "exact"] if i in bound_cols else []
            elif i in rate_cols:
                line += [str(c), "", ""] + ([""] if i in bound_cols else [])
            else:
                line.append(str(c))
        w.writerow(line)
    return buf.getvalue()


def _num(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.2f}"


_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
    # in LaTeX's default font encoding (OT1) a bare <, > or | prints as another glyph (¡, ¿, —)
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def tex_escape(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def latex(tables: Sequence[Table]) -> str:
    """booktabs tables; a rate is ``62.9 {\\scriptsize [60.8, 64.8]}``."""
    out = ["% requires \\usepackage{booktabs}"]
    for t in tables:
        align = "".join(
            "r" if any(isinstance(r[i], Rate) for r in t.rows) else "l" for i in range(len(t.columns))
        )
        out.append("\\begin{table}[t]\n\\centering\\small")
        out.append(f"\\caption{{{tex_escape(t.title)}}}")
        out.append(f"\\begin{{tabular}}{{{align}}}\n\\toprule")
        out.append(" & ".join(tex_escape(c) for c in t.columns) + " \\\\\n\\midrule")
        for row in t.rows:
            cells = []
            for c in row:
                if isinstance(c, Rate):
                    ge = "$\\geq$" if c.lower_bound else ""
                    if c.value is None:
                        cells.append("--")
                    elif c.lo is not None and c.hi is not None:
                        cells.append(
                            f"{ge}{100 * c.value:.1f} {{\\scriptsize [{100 * c.lo:.1f}, {100 * c.hi:.1f}]}}"
                        )
                    else:
                        cells.append(f"{ge}{100 * c.value:.1f}")
                else:
                    cells.append(tex_escape(c))
            out.append(" & ".join(cells) + " \\\\")
        out.append("\\bottomrule\n\\end{tabular}")
        if t.note:  # under the table, line by line (a list of departures stays a list)
            lines = [tex_escape(line) for line in t.note.split("\n") if line.strip()]
            out.append("\\par\\smallskip{\\footnotesize " + " \\\\\n".join(lines) + "}")
        out.append("\\end{table}\n")
    return "\n".join(out)


def terminal(tables: Sequence[Table], stream: IO[str] | None = None, *, width: int | None = None) -> None:
    """Print the tables fitted to the page width (fit.py): whole, wrapped at words, or one block per row."""
    from beavertui.reports.fit import print_tables

    print_tables(tables, stream, width=width)


def as_json(tables: Sequence[Table]) -> str:
    """Tables as JSON: a list of {title, columns, rows}; a rate is {value, lo, hi} (fractions)."""
    import json

    return json.dumps([table_json(t) for t in tables])


def table_json(t: Table) -> dict[str, object]:
    """One table as {name, title, columns, rows, note}; a rate is {value, lo, hi, lower_bound} (fractions;
    lo and hi the 95% interval the table prints, null where it prints none)."""

    def cell(c: Cell) -> object:
        if isinstance(c, Rate):
            return {"value": c.value, "lo": c.lo, "hi": c.hi, "lower_bound": c.lower_bound}
        return c

    return {
        "name": t.slug,
        "title": t.title,
        "columns": list(t.columns),
        "rows": [[cell(c) for c in r] for r in t.rows],
        "note": t.note,
    }


def emit(tables: Sequence[Table], fmt: str, stream: IO[str] | None = None) -> None:
    """Write the tables in one of FORMATS to ``stream`` (standard output by default)."""
    import sys

    out = stream or sys.stdout
    if fmt == "table":
        terminal(tables, out)
        return
    text = {"md": markdown, "csv": csv_text, "latex": latex, "json": as_json}[fmt](tables)
    out.write(text if text.endswith("\n") else text + "\n")
