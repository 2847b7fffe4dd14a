"""The paper's Table 1 and Table 2 as report tables (terminal, Markdown, CSV and LaTeX through render.py).

The numbers are engine/metrics/paper_tables.py's; this module only lays them out: rates as percentages, the
task denominators in their own columns, Kendall's tau with the models it covers and the ones left out, and
every departure from the paper listed under Table 2.
"""

from __future__ import annotations

from beavertui.engine.metrics.paper_tables import TABLE2_P, PaperTables, Tau
from beavertui.reports.cells import Cell, Rate, Table


def _rate(x: float | None) -> Rate:
    return Rate(x)


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}"


def _pp(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _why_no_tau(n_models: int) -> str:
    """Why Kendall's tau is undefined over ``n_models`` models that have both columns."""
    if n_models < 2:
        return ": it needs two models or more with both Iter and Rep"
    return ": every model ties in Iter or in Rep"


def _infra_left_out(pt: PaperTables) -> str:
    """Which attempts the rows leave out because an infrastructure failure hit them, per model ('' if none)."""
    hit = [(r.model, r.n_infra_excluded) for r in pt.table1 if r.n_infra_excluded]
    if not hit:
        return ""
    return (
        " Left out of every rate: the attempts an infrastructure failure (endpoint, GPU, toolchain) hit ("
        + ", ".join(f"{m}: {n}" for m, n in hit)
        + "), and with them a task that has no other attempt; a batch's --resume RUN_DIR --retry-infra runs "
        "their sessions again."
    )


def paper_tables(pt: PaperTables) -> list[Table]:
    """Table 1 and Table 2 of the paper, each row one model."""
    k = pt.table1[0].k if pt.table1 else 5
    return [_table1(pt, k), _table2(pt, k)]


def _table1(pt: PaperTables, k: int) -> Table:
    proto = "main protocol per model (departures below)" if pt.main is None else pt.main.short()
    rows1: list[tuple[Cell, ...]] = [
        (
            r.model,
            str(r.n_tasks),
            _rate(r.pass_at_1),
            _rate(r.debug_rate),
            _rate(r.pass_at_k),
            _rate(r.stagnation_rate),
            f"{r.n_stagnated}/{r.n_never_succeeded}",
            "-"
            if r.dominant_stagnation is None
            else f"{r.dominant_stagnation} ({100 * (r.dominant_stagnation_share or 0):.1f}%)",
            _rate(r.compile_at_1),
            "-" if r.avg_iterations is None else f"{r.avg_iterations:.2f}",
        )
        for r in pt.table1
    ]
    return Table(
        name="paper_table1",
        title=f"Table 1: {proto}",
        columns=(
            "model",
            "tasks",
            "pass@1",
            f"debug_rate@{k}",
            f"pass@{k}",
            "stagnation",
            "stagnated/never correct",
            "dominant stagnation",
            "compile@1",
            "avg iterations",
        ),
        rows=tuple(rows1),
        note=(
            f"Percent of the row's tasks (tasks: the denominator), stagnation excepted. pass@1, pass@{k}: "
            "tasks repaired (correct, at least the gate p x the reference's speed) at the first attempt, "
            f"within {k}; debug_rate@{k} = (pass@{k} - pass@1) / (1 - pass@1). stagnation: percent of the "
            "trajectories that never succeeded (after the run: no correct attempt) that a detector stopped; "
            "dominant stagnation: its share of the stagnated. compile@1: first attempts that built. avg "
            "iterations: the mean iteration (1 to K) of the first correct attempt at p = 0, over the "
            "trajectories that have one. compile@1 and avg iterations are the release's Table 1 columns. "
            f"-: not defined (debug_rate@{k} when pass@1 is 100; stagnation when no trajectory failed; "
            "dominant stagnation when none stagnated; avg iterations when none was correct)."
            + _infra_left_out(pt)
        ),
        keys=1,
    )


def _table2(pt: PaperTables, k: int) -> Table:
    rows2: list[tuple[Cell, ...]] = [
        (
            r.model,
            str(r.n_tasks_iter),
            *(_rate(r.p.get(p)) for p in TABLE2_P),
            _pp(r.swing),
            _rate(r.iter),
            _rate(r.rep),
            _signed(r.delta_iter_rep),
            "-" if r.n_tasks_rep is None else str(r.n_tasks_rep),
        )
        for r in pt.table2
    ]
    say_tau = _say_tau(pt.tau)
    rep = "repeated arm per model" if pt.rep is None else pt.rep.short()
    deps = "\n".join(f"- {d}" for d in pt.departures)
    return Table(
        name="paper_table2",
        title=f"Table 2: gate p, swing, Iter vs Rep ({rep})",
        columns=(
            "model",
            "tasks",
            *(f"p={p:g}" for p in TABLE2_P),
            "swing (pp)",
            "Iter",
            "Rep",
            "Delta iter-rep (pp)",
            "tasks (Rep)",
        ),
        rows=tuple(rows2),
        note=(
            f"Percent of the row's tasks. p=P: pass@{k} of the main run with the gate at p = P (a correct "
            "attempt at least P x the reference's speed); swing: max minus min of the three. Iter: the main "
            f"run's pass@{k} at its gate; Rep: the repeated arm's, over its own tasks (tasks (Rep)); -: no "
            "repeated arm for the model (Rep, Delta, tasks (Rep); an under-sampled one: Rep and Delta, named "
            "under the departures), or no value at some p (swing).\n"
            f"{say_tau}\nDelta iter-rep = Iter - Rep (the paper's sign).\nDepartures from the paper:\n{deps}"
        ),
        keys=1,
    )


def _say_tau(tau: Tau) -> str:
    """Kendall's tau-b of Iter vs Rep, the models it covers and those it leaves out."""
    return (
        "Kendall's tau-b (Iter vs Rep): "
        + ("n/a" if tau.tau is None else f"{tau.tau:.3f}")
        + f" over {len(tau.models)} model(s)"
        + (f" ({', '.join(tau.models)})" if tau.models else "")
        + ("" if tau.tau is not None else _why_no_tau(len(tau.models)))
        + (f"; left out (one column only): {', '.join(tau.left_out)}" if tau.left_out else "")
    )
