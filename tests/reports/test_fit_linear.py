"""The table fitter is linear in rows: the work it does per row does not grow with the table.

Counted, not timed: every read of a cell goes through a row type that counts its reads, so a layout that
looks at every row again for each cell (as the fitter once did, 56 s for 3,000 models) shows as reads
that grow with the square of the rows.
"""

from __future__ import annotations

import pytest

from beavertui.reports.fit import lines
from beavertui.reports.tables import Rate, Table


class CountingRow(tuple):  # type: ignore[type-arg]
    reads = 0

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        CountingRow.reads += 1
        return super().__getitem__(i)

    def __iter__(self):  # type: ignore[no-untyped-def]
        for i in range(len(self)):
            yield self[i]


def _table(n: int) -> Table:
    rows = tuple(
        CountingRow((f"model-{i}", "iterative K5 L3", str(i), Rate(0.5, 0.4, 0.6), f"note {i % 3}"))
        for i in range(n)
    )
    return Table("t", ("model", "protocol", "tasks", "pass@k", "note"), rows)


def _reads(n: int, width: int) -> int:
    table = _table(n)
    CountingRow.reads = 0
    out = lines(table, width)
    assert len(out) >= n
    return CountingRow.reads


@pytest.mark.parametrize("width", [40, 80, 200])
def test_cell_reads_grow_linearly_with_the_rows(width: int) -> None:
    small, large = _reads(200, width), _reads(800, width)
    assert small > 0
    assert large <= 4 * small + 50, (small, large)
