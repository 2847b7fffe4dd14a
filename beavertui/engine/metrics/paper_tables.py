"""The paper's Table 1 and Table 2, assembled from finished GroupMetrics (docs/metrics.md, "The paper's tables").

Table 1 (the main experiment): per model, the iterative group of the main protocol: pass@1, debug_rate@k,
pass@k, stagnation_rate, dominant_stagnation, and the release's compile@1 and avg_iterations.
Table 2 (the ablations): per model, pass@k of the same group at p = 0, 0.7 and 1.5 (its p sweep) with their
swing (max - min), the iterative arm (Iter) beside the repeated arm (Rep) and Delta_iter-rep = Iter - Rep
(the paper's sign), and Kendall's tau-b between the Iter and Rep columns over exactly the models both have,
naming the ones left out (the paper's 0.47 is over 6 of its 7 models).

Which group is "the main protocol": the iterative protocol closest to the paper's default (iterative, L3,
H4, T0.7, gate after the run), among those present; the tables say which one they read and list every way
it departs from the paper. The repeated arm of a model is its repeated group that agrees with the main
protocol on every setting but the method and the temperature (T1.0 preferred). Rows, not strings: the
layouts live in reports/paper.py. Nothing here reads a file or prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from beavertui.engine.metrics.compute import GroupMetrics
from beavertui.engine.metrics.kendall import kendall_tau_b
from beavertui.engine.metrics.table import ProtocolKey

#: The paper's main protocol (its Table 1): the settings a main group is matched on.
PAPER_MAIN: dict[str, Any] = {
    "method": "iterative",
    "feedback": "L3",
    "history": 4,
    "temperature": 0.7,
    "gate_mode": "after_run",
    "budget": 5,
    "planning": "implicit",
    "few_shot": "none",
}
#: The temperature of the paper's repeated arm.
PAPER_REP_TEMPERATURE = 1.0
#: The p columns of Table 2.
TABLE2_P: tuple[float, ...] = (0.0, 0.7, 1.5)
#: Departures of beavertui from the paper and the release that hold for every run (docs/metrics.md).
STANDING_DEPARTURES: tuple[str, ...] = (
    "no_progress also asks for the same error signature in the last 3 attempts (the paper's text; the "
    "release's code compares categories only)",
    "speedups come from beavertui's interleaved timing (ratio of medians; CUPTI kernel records for release "
    "tasks), not the release's nsys range timing of 10 x 10 trials",
    "feedback wording at L1 and L3 is beavertui's: L3 quotes the recorded logs, sanitizer records and timing "
    "instead of the release's per-category hint templates",
    "the first turn does not name the broken start's labelled error category (the release's says \"Error "
    'category: <label>"), and quotes its error log as up to the first 40 and last 40 lines, 6,000 characters in '
    "all, where the release quotes its first 1,500 characters",
    "the candidate is the reply's last fenced block in the task's language (or untagged), else no code; the "
    "release's extract_code takes the first block fenced cuda, cpp, c++, python, py or untagged, else the "
    "whole reply",
    "tasks: the rows count the tasks scored here (the usable set on this GPU); the paper scored 213 tasks in "
    "Table 1 and 200 in Table 2",
    "a task the harness never scored is left out of a row's denominator; the release's p_sweep.py counts it "
    "as a failure",
)


@dataclass(frozen=True)
class Table1Row:
    model: str
    corpus: str | None
    n_tasks: int
    k: int
    pass_at_1: float | None
    debug_rate: float | None
    pass_at_k: float | None
    stagnation_rate: float | None
    n_stagnated: int
    n_never_succeeded: int
    dominant_stagnation: str | None
    dominant_stagnation_share: float | None
    compile_at_1: float | None
    avg_iterations: float | None
    n_infra_excluded: int = 0
    """Attempts hit by an infrastructure failure: in no rate (a task with no other attempt is in no row)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "corpus": self.corpus,
            "n_tasks": self.n_tasks,
            "k": self.k,
            "pass@1": self.pass_at_1,
            "debug_rate@k": self.debug_rate,
            "pass@k": self.pass_at_k,
            "stagnation_rate": self.stagnation_rate,
            "stagnated": self.n_stagnated,
            "never_succeeded": self.n_never_succeeded,
            "dominant_stagnation": self.dominant_stagnation,
            "dominant_stagnation_share": self.dominant_stagnation_share,
            "compile@1": self.compile_at_1,
            "avg_iterations": self.avg_iterations,
            "infra_excluded": self.n_infra_excluded,
        }


@dataclass(frozen=True)
class Table2Row:
    model: str
    corpus: str | None
    n_tasks_iter: int
    n_tasks_rep: int | None
    p: dict[float, float | None]
    swing: float | None
    iter: float | None
    rep: float | None

    @property
    def delta_iter_rep(self) -> float | None:
        """Delta_iter-rep = Iter - Rep, the paper's sign."""
        return None if self.iter is None or self.rep is None else self.iter - self.rep

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "corpus": self.corpus}
        out.update({f"p{p:g}" if p else "p0": v for p, v in self.p.items()})
        out.update(
            {
                "swing": self.swing,
                "iter": self.iter,
                "rep": self.rep,
                "delta_iter_rep": self.delta_iter_rep,
                "n_tasks_iter": self.n_tasks_iter,
                "n_tasks_rep": self.n_tasks_rep,
            }
        )
        return out


@dataclass(frozen=True)
class Tau:
    """Kendall's tau-b between the Iter and Rep columns over the models both have."""

    tau: float | None
    p_value: float | None
    models: tuple[str, ...]
    left_out: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "tau": self.tau,
            "p_value": self.p_value,
            "n_models": len(self.models),
            "models": list(self.models),
            "left_out": list(self.left_out),
        }


@dataclass(frozen=True)
class PaperTables:
    main: ProtocolKey | None
    rep: ProtocolKey | None
    table1: tuple[Table1Row, ...]
    table2: tuple[Table2Row, ...]
    tau: Tau
    departures: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        return {
            "main_protocol": None if self.main is None else self.main.as_dict(),
            "rep_protocol": None if self.rep is None else self.rep.as_dict(),
            "table1": [r.as_json() for r in self.table1],
            "table2": [r.as_json() for r in self.table2],
            "kendall_tau_iter_rep": self.tau.as_json(),
            "departures": list(self.departures),
        }


def _closeness(p: ProtocolKey) -> tuple[int, ...]:
    d = p.as_dict()
    return tuple(int(d[k] == v) for k, v in PAPER_MAIN.items())


def main_protocol(groups: Sequence[GroupMetrics]) -> ProtocolKey | None:
    """The iterative protocol the tables read when one serves every model: the closest to the paper's main
    protocol, then the one most models have, then the first in sort order."""
    protos: dict[ProtocolKey, set[str]] = {}
    for g in groups:
        if g.protocol.method == "iterative" and g.n_tasks:
            protos.setdefault(g.protocol, set()).add(g.model)
    if not protos:
        return None
    return min(protos, key=lambda p: (-sum(_closeness(p)), -len(protos[p]), p))


def main_groups(groups: Sequence[GroupMetrics]) -> list[GroupMetrics]:
    """Per model and corpus, the iterative group of its main protocol: the closest to the paper's, then the
    one most models share (so that models run alike are read alike), then the first in sort order. Models
    whose decoding differs (the release's own configs run some models at T1.0) get their own."""
    shared: dict[ProtocolKey, int] = {}
    for g in groups:
        if g.protocol.method == "iterative" and g.n_tasks:
            shared[g.protocol] = shared.get(g.protocol, 0) + 1
    best: dict[tuple[str, str | None], GroupMetrics] = {}
    for g in sorted(groups, key=GroupMetrics.sort_key):
        if g.protocol.method != "iterative" or not g.n_tasks:
            continue
        key = (g.model, g.corpus)
        rank = (-sum(_closeness(g.protocol)), -shared[g.protocol], g.protocol)
        have = best.get(key)
        if have is None or rank < (-sum(_closeness(have.protocol)), -shared[have.protocol], have.protocol):
            best[key] = g
    return sorted(best.values(), key=GroupMetrics.sort_key)


def _rep_of(main: ProtocolKey, g: ProtocolKey) -> bool:
    """Whether ``g`` is a repeated arm of ``main``: every setting equal but method, temperature and the
    settings repeated sampling does not use (stagnation, continue after pass, history, feedback, gate mode)."""
    if g.method != "repeated":
        return False
    a, b = main.as_dict(), g.as_dict()
    skip = {"method", "temperature", "stagnation", "continue_after_pass", "history", "feedback", "gate_mode"}
    return all(a[k] == b[k] for k in a if k not in skip)


def paper_tables(groups: Sequence[GroupMetrics], *, rescored_gate: float | None = None) -> PaperTables:
    """Table 1, Table 2 and Kendall's tau of the groups, with the departures that apply to them."""
    mains = main_groups(groups)
    if not mains:
        return PaperTables(None, None, (), (), Tau(None, None, (), ()), STANDING_DEPARTURES)
    protos = {g.protocol for g in mains}
    main = mains[0].protocol if len(protos) == 1 else None
    reps = _repeated_arms(mains, groups)
    rep_protos = {r.protocol for r in reps.values()}
    rep_proto = next(iter(rep_protos)) if len(rep_protos) == 1 else None
    t1 = tuple(_table1_row(g) for g in mains)
    t2 = [_table2_row(g, reps.get((g.model, g.corpus))) for g in mains]
    # tau over exactly the models both columns have; the others are named
    both = [r for r in t2 if r.iter is not None and r.rep is not None]
    one = sorted(r.model for r in t2 if r not in both)
    if len(both) >= 2:
        tau, pval = kendall_tau_b([r.iter for r in both], [r.rep for r in both])  # type: ignore[misc]
    else:
        tau, pval = None, None
    return PaperTables(
        main,
        rep_proto,
        t1,
        tuple(t2),
        Tau(tau, pval, tuple(r.model for r in both), tuple(one)),
        _all_departures(mains, reps, per_model=main is None, rescored_gate=rescored_gate),
    )


def _repeated_arms(
    mains: Sequence[GroupMetrics], groups: Sequence[GroupMetrics]
) -> dict[tuple[str, str | None], GroupMetrics]:
    """Per (model, corpus) of a main group: its repeated arm with tasks (T = 1.0 first), if any."""
    reps: dict[tuple[str, str | None], GroupMetrics] = {}
    for g in mains:
        cands = [
            r
            for r in groups
            if r.model == g.model and r.corpus == g.corpus and _rep_of(g.protocol, r.protocol)
        ]
        cands = [r for r in cands if r.n_tasks]
        if cands:
            reps[(g.model, g.corpus)] = min(
                cands, key=lambda r: (r.protocol.temperature != PAPER_REP_TEMPERATURE, r.protocol)
            )
    return reps


def _table1_row(g: GroupMetrics) -> Table1Row:
    return Table1Row(
        model=g.model,
        corpus=g.corpus,
        n_tasks=g.n_tasks,
        k=g.k,
        pass_at_1=g.pass_at_1,
        debug_rate=g.debug_rate,
        pass_at_k=g.pass_at_k,
        stagnation_rate=g.stagnation_rate,
        n_stagnated=g.n_stagnated,
        n_never_succeeded=g.n_never_succeeded,
        dominant_stagnation=g.dominant_stagnation,
        dominant_stagnation_share=g.dominant_stagnation_share,
        compile_at_1=g.compile_at_1,
        avg_iterations=g.avg_iterations,
        n_infra_excluded=g.n_infra_excluded,
    )


def _table2_row(g: GroupMetrics, r: GroupMetrics | None) -> Table2Row:
    """A main group's Table 2 row, beside its repeated arm ``r``."""
    vals = {p: g.p_sweep.get(p) for p in TABLE2_P}
    known = [v for v in vals.values() if v is not None]
    return Table2Row(
        model=g.model,
        corpus=g.corpus,
        n_tasks_iter=g.n_tasks,
        n_tasks_rep=None if r is None else r.n_tasks,
        p=vals,
        swing=max(known) - min(known) if len(known) == len(vals) else None,
        iter=g.pass_at_k,
        rep=None if r is None else r.pass_at_k,
    )


def _all_departures(
    mains: Sequence[GroupMetrics],
    reps: Mapping[tuple[str, str | None], GroupMetrics],
    *,
    per_model: bool,
    rescored_gate: float | None,
) -> tuple[str, ...]:
    """Every departure from the paper's protocol the tables carry, each once (``per_model``: the main groups
    ran under different protocols, so each departure names its model)."""
    deps: list[str] = []
    if rescored_gate is not None:
        deps.append(f"re-scored at gate p = {rescored_gate:g} after the run (metrics --gate)")
    for g in mains:
        who = f"{g.model}: " if per_model else ""
        r = reps.get((g.model, g.corpus))
        for d in _departures(g.protocol, None if r is None else r.protocol):
            if f"{who}{d}" not in deps:
                deps.append(f"{who}{d}")
        if r is not None and r.under_sampled:
            deps.append(
                f"{g.model}: its repeated arm is under-sampled (a task with fewer than K = {r.k} samples, as a "
                "session cut and scored with --include-unfinished leaves it): its Rep and Delta_iter-rep are empty"
            )
    deps.extend(STANDING_DEPARTURES)
    return tuple(deps)


def _departures(main: ProtocolKey, rep: ProtocolKey | None) -> list[str]:
    out: list[str] = []
    d = main.as_dict()
    for k, v in PAPER_MAIN.items():
        if d[k] != v:
            out.append(f"main protocol: {k} = {d[k]}, the paper's is {v}")
    if main.gate != 0.7:
        out.append(f"main protocol: gate p = {main.gate:g}, the paper's Table 1 is at p = 0.7")
    if main.gate_baseline != "reference":
        out.append(
            f"main protocol: the gate p applies to the {main.gate_baseline} baseline (gate_baseline), not the "
            f"reference: every speedup and p of these tables is against {main.gate_baseline}, a task without it "
            "counting at p = 0 only"
        )
    if "osc=jumps" in main.stagnation:
        out.append(
            "category_oscillation used the stricter 'jumps' rule (jumps back to a failing category already "
            "seen), not the release's count of changes of category"
        )
    if main.stagnation == "report":
        out.append("stagnation detectors only reported, never stopped the loop (the paper stops on them)")
    if main.continue_after_pass:
        out.append("the loop went on after a pass (the paper stops at the first correct attempt)")
    if rep is None:
        out.append("no repeated arm: Table 2's Rep and Delta_iter-rep columns are empty")
    elif rep.temperature != PAPER_REP_TEMPERATURE:
        out.append(f"repeated arm at T = {rep.temperature:g}, the paper's is T = 1.0")
    return out
