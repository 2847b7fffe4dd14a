"""Re-scoring an attempts table: at another gate, and without an arm that was run twice.

``with_gate`` sets the gate p of every protocol whose loop did not depend on it (the paper's gate applied
after the run, repeated sampling, a loop that spent its whole budget), so any run, an imported harness run
included, can be read at another p. An in-loop gate decided where a trajectory stopped, so those protocols keep
theirs (their p sweep still gives pass@k at other p, with its bounds).

``drop_repeated_arms`` keeps one run per arm: two runs of one protocol in one folder (the same model, corpus
and protocol, the same task and sample index, from different run ids) are the same arm run twice, not two
trajectories of a task; the first run's rows are kept (the order the sessions were read in) and the others
are counted, so metrics can say what was left out. Nothing here reads a file or prints.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from beavertui.engine.metrics.table import AttemptsTable, ProtocolKey


def _regated(p: ProtocolKey, gate: float) -> ProtocolKey | None:
    if p.method == "repeated" or not p.in_loop or p.continue_after_pass:
        return dataclasses.replace(p, gate=float(gate))
    return None if abs(p.gate - gate) > 1e-12 else p


def with_gate(table: AttemptsTable, gate: float) -> tuple[AttemptsTable, list[ProtocolKey]]:
    """The table with every protocol's gate set to ``gate`` where the loop did not depend on it, and the
    protocols left as they were (in-loop gates other than ``gate``)."""
    if not gate >= 0 or gate != gate:
        raise ValueError(f"gate {gate!r} is not a speedup >= 0")
    kept: list[ProtocolKey] = []
    index: dict[ProtocolKey, int] = {}
    remap = []
    for p in table.protocols:
        q = _regated(p, gate)
        if q is None:
            kept.append(p)
            q = p
        remap.append(index.setdefault(q, len(index)))
    codes = np.asarray(remap, np.int64)[table.protocol] if len(table) else table.protocol
    return dataclasses.replace(table, protocol=codes, protocols=tuple(index)), kept


def drop_repeated_arms(table: AttemptsTable) -> tuple[AttemptsTable, dict[str, int]]:
    """Rows of the first run of each (model, corpus, protocol, task, sample), and per later run id the number
    of its trajectories left out because an earlier run already holds that arm."""
    if len(table) == 0:
        return table, {}
    run = table.col("run_id")
    cols = [table.col(n).codes + 1 for n in ("model", "corpus", "task_id")] + [table.protocol, table.sample]
    _, cell = np.unique(np.column_stack(cols), axis=0, return_inverse=True)
    cell = cell.reshape(-1)
    first = np.full(int(cell.max()) + 1, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, cell, run.codes)
    keep = run.codes == first[cell]
    if keep.all():
        return table, {}
    dropped: dict[str, int] = {}
    gone = ~keep
    for r, _cell in np.unique(np.column_stack([run.codes[gone], cell[gone]]), axis=0).tolist():
        name = run.labels[r]
        dropped[name] = dropped.get(name, 0) + 1
    return table.take(keep), dropped
