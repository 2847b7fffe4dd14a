"""The metric tables as plain data (title, columns, rows), built once and rendered by render.py.

Rates are shown as percentages with their 95% bootstrap interval over tasks (docs/metrics.md). A cell is a
string or a Rate (cells.py); the renderers decide how a Rate looks in each format.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from beavertui.engine.metrics.bootstrap import RESAMPLES, SEED, intervals
from beavertui.engine.metrics.compute import P_SWEEP, GroupMetrics
from beavertui.engine.metrics.registry import METRICS
from beavertui.reports.cells import Cell, Rate, Table


def _f(x: float) -> float | None:
    return None if x is None or np.isnan(x) else float(x)


def rates(g: GroupMetrics, resamples: int, seed: int) -> dict[str, Rate]:
    """Every rate of a group with its 95% bootstrap interval, as the tables print them: pass@1, pass@k,
    p<p> of the sweep (e.g. ``p0.7``), debug, stagnation, degenerate, degenerate_raw, degenerate_raw_floor."""
    return _rates(g, resamples, seed)


def _rates(g: GroupMetrics, resamples: int, seed: int) -> dict[str, Rate]:
    """The registry's rates (engine/metrics/registry.py): the means (pass@1, pass@k), the p sweep, then
    the ratios, each with its interval."""
    c = g.cells
    iv = intervals(c.means, c.nums, c.dens, resamples, seed, tasks=c.tasks)
    bounds = {"mean": (iv.mean_lo, iv.mean_hi), "ratio": (iv.ratio_lo, iv.ratio_hi)}
    out: dict[str, Rate] = {}

    def add(name: str, v: float | None, kind: str, col: int, bound: bool = False) -> None:
        lo, hi = bounds[kind]
        out[name] = Rate(v, None if v is None else _f(lo[col]), None if v is None else _f(hi[col]), bound)

    rated = [(m.rate, m.name, *m.interval) for m in METRICS if m.rate is not None and m.interval is not None]
    for name, field, kind, col in rated:
        if kind == "mean":
            add(name, getattr(g, field), kind, col)
    for j, p in enumerate(P_SWEEP):
        add(f"p{p:.1f}", g.p_sweep[p], "mean", 2 + j, not g.p_sweep_exact.get(p, True))
    for name, field, kind, col in rated:
        if kind == "ratio":
            add(name, getattr(g, field), kind, col)
    return out


def _protocol_label(g: GroupMetrics) -> str:
    """The protocol's short label, with the corpus where the group has one."""
    proto = g.protocol.short()
    return f"{proto} [{g.corpus}]" if g.corpus else proto


def _main_row(g: GroupMetrics, r: Mapping[str, Rate]) -> tuple[Cell, ...]:
    """One group's row of the main table."""
    dom = "-"
    if g.dominant_stagnation is not None and g.dominant_stagnation_share is not None:
        dom = f"{g.dominant_stagnation} ({100 * g.dominant_stagnation_share:.0f}%)"
    note = f"under-sampled (n < K={g.k})" if g.under_sampled else ""
    if g.n_degenerate_fallback:
        fall = f"{g.n_degenerate_fallback} of {g.n_degenerate_judged} without timing samples: raw rule"
        note = "; ".join(x for x in (note, fall) if x)
    if g.n_unstable_successes:
        shaky = f"unstable timing: {g.n_unstable_successes}"
        note = "; ".join(x for x in (note, shaky) if x)
    return (
        g.model,
        _protocol_label(g),
        str(g.n_tasks),
        r["pass@1"],
        r["pass@k"],
        r["debug"],
        r["stagnation"],
        dom,
        r["degenerate"],
        r["degenerate_raw"],
        Rate(r["degenerate_raw_floor"].value),  # its interval is in --json: the column stays narrow
        str(g.n_infra_excluded),
        str(g.n_flagged_successes),
        note,
    )


def main_tables(
    groups: Sequence[GroupMetrics],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    group_rates: Sequence[Mapping[str, Rate]] | None = None,
) -> list[Table]:
    """The per-group table and the p-sweep table (``group_rates``: each group's ``rates``, when the caller
    has them already; the bootstrap is then not run again)."""
    rates = list(group_rates) if group_rates is not None else [_rates(g, resamples, seed) for g in groups]
    rows: list[tuple[Cell, ...]] = []
    sweep_rows: list[tuple[Cell, ...]] = []
    for g, r in zip(groups, rates, strict=True):
        rows.append(_main_row(g, r))
        sweep_rows.append((g.model, _protocol_label(g), *(r[f"p{p:.1f}"] for p in P_SWEEP)))
    main = Table(
        "Repair rates per model and protocol (at the protocol's gate)",
        (
            "model",
            "protocol",
            "tasks",
            "pass@1",
            "pass@k",
            "debug@k",
            "stagnation",
            "dominant stall",
            "degenerate",
            "degenerate raw",
            "raw noise floor",
            "infra excl.",
            "flagged",
            "note",
        ),
        tuple(rows),
        note="Percent of tasks; [95% bootstrap interval over tasks, percentile, "
        f"{resamples} resamples, seed {seed}]. Infrastructure-hit attempts are excluded and counted. "
        "flagged: attempts that passed the gate with an anti-cheat flag, counted here and in no rate. "
        "unstable timing: successes at the gate whose timing's CV stayed above 3% (counted as "
        "successes). "
        "debug@k = (pass@k - pass@1) / (1 - pass@1) over per-task means. degenerate: first successes at "
        "iteration >= 2 whose speedup's 95% interval (over the independently timed units: process runs, or a "
        "native timing's rounds; widened by the spread of the reference timed against itself) lies below 1.0; "
        "degenerate raw: the paper's rule, speedup < 1.0; raw noise floor: the part of it timing noise alone "
        "gives, half the judged first successes whose interval holds 1.0 (as fast as the reference within "
        "noise: the reference timed against itself reads below 1.0 half the time); raw less the floor estimates the "
        "degeneration noise does not explain; - where none has an interval (docs/metrics.md)."
        + gated_note(groups),
        name="main",
    )
    sweep = Table(
        "pass@k by speedup threshold p (>= marks a lower bound: p above an in-loop gate)",
        ("model", "protocol", *(f"p={p:.1f}" for p in P_SWEEP)),
        tuple(sweep_rows),
        note="Percent of tasks: pass@k with a repair counted only when its speedup over the reference is at "
        f"least p (p=0.0: correct at any speed); [95% bootstrap interval over tasks, percentile, {resamples} "
        f"resamples, seed {seed}]." + gated_note(groups),
        name="p_sweep",
    )
    return [main, sweep]


def gated_note(groups: Sequence[GroupMetrics]) -> str:
    """For a table with a protocol whose gate names a baseline (p-vs=NAME in its label): that its speedups,
    gate, p sweep and degeneration are against that baseline, not the reference; "" otherwise."""
    names = sorted({g.protocol.gate_baseline for g in groups} - {"reference"})
    if not names:
        return ""
    return (
        " p-vs=NAME (" + ", ".join(f"p-vs={n}" for n in names) + "): the protocol's gate names a baseline "
        "(gate_baseline), so its speedup, p sweep and degeneration in this table are those against NAME (its "
        "median stored once per GPU over the candidate's; no interval, so degenerate falls back to the raw rule), "
        "not against the reference; a task without NAME counts at p = 0 only. The baselines table gives it "
        "against the reference."
    )


def baselines_table(
    groups: Sequence[GroupMetrics],
    group_rates: Sequence[Mapping[str, Rate]],
    against: Sequence[tuple[str, GroupMetrics]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Table:
    """pass@1, pass@k and degeneration of every group against its reference and against each named baseline
    its sessions recorded (docs/metrics.md, Baselines)."""
    rows: list[tuple[Cell, ...]] = []
    for n, g in enumerate(groups):
        r = group_rates[n]
        proto = g.protocol.short() + (f" [{g.corpus}]" if g.corpus else "")
        gated = g.protocol.gate_baseline
        main = gated if gated == "reference" else f"{gated} (gate)"
        rows.append(
            (
                g.model, proto, main, str(g.n_tasks), r["pass@1"], r["pass@k"], r["degenerate_raw"],
                Rate(r["degenerate_raw_floor"].value),
            )
        )  # fmt: skip
        # the loop stopped at the first attempt at p x the reference: one that might have passed against a
        # baseline later was never made, so pass@k against it is a lower bound (pass@1 and the first correct
        # attempt are there whatever the gate)
        stopped = (
            g.protocol.in_loop and not g.protocol.continue_after_pass and g.protocol.method != "repeated"
        )
        for name, b in against:
            if (b.model, b.corpus, b.protocol) != (g.model, g.corpus, g.protocol) or name == main:
                continue
            rb = _rates(b, resamples, seed)
            degenerate = Rate(None) if name == "roofline" else rb["degenerate_raw"]
            floor = Rate(None) if name == "roofline" else Rate(rb["degenerate_raw_floor"].value)
            pk = rb["pass@k"]
            if stopped and name != "reference" and pk.value is not None:
                pk = Rate(pk.value, pk.lo, pk.hi, lower_bound=True)
            rows.append((g.model, proto, name, str(b.n_tasks), rb["pass@1"], pk, degenerate, floor))
    return Table(
        "Repair rates against each baseline (the protocol's gate p applied to the speedup against it; >= marks "
        "a lower bound)",
        ("model", "protocol", "baseline", "tasks", "pass@1", "pass@k", "degenerate", "raw noise floor"),
        tuple(rows),
        note="Percent of the tasks that have the baseline on the sessions' GPU; [95% bootstrap interval over "
        f"tasks, {resamples} resamples, seed {seed}]. The first row of a group is the main table's: against the "
        "reference (the task's expert reference, timed against the candidate in one timing stage), or, marked "
        "NAME (gate), the baseline the protocol's gate names (gate_baseline, p-vs=NAME): over every task, a task "
        "without that baseline counting at p = 0 only (no success above p = 0); the rows below it give that "
        "protocol against the reference, and against NAME over the tasks that have it. eager, compile "
        "(torch.compile default), "
        "compile_ro (torch.compile reduce-overhead), graph (CUDA Graph replay), vendor (a vendor library): the "
        "task's PyTorch equivalent, its median time of one call stored once per GPU (CUDA events, L2 flushed "
        "before each call), over the attempt's candidate median. roofline: the least time of the task's declared "
        "bytes and FLOPs at the GPU's measured copy bandwidth and bf16 rate, so the speedup against it is the "
        "fraction of the roofline reached. >=: pass@k of a protocol whose gate stopped the loop (in-loop, not "
        "all-K): the loop ended at the first attempt at p x the reference, and one that would have passed against "
        "the baseline later was never made. degenerate: the first correct attempt, at iteration 2 or later, slower "
        "than that baseline (speedup below 1.0, the paper's raw rule); none for the roofline, which no "
        "candidate can beat. raw noise floor: the part of that rate timing noise alone gives (the main table's "
        "note); - against a named baseline, whose speedups carry no interval.",
        name="baselines",
    )


def _analysis_shares(c: Any, resamples: int, seed: int) -> list[Rate]:
    """Edit precision, bug recall and code degeneration of one group's cells, with their intervals."""
    iv = intervals(np.zeros((len(c.tasks), 0)), c.nums, c.dens, resamples, seed, tasks=c.tasks)
    num, den = c.nums.sum(axis=0), c.dens.sum(axis=0)
    shares = []
    for j in range(3):
        if den[j] > 0:
            shares.append(Rate(float(num[j] / den[j]), _f(iv.ratio_lo[j]), _f(iv.ratio_hi[j])))
        else:
            shares.append(Rate(None))
    return shares


def analysis_table(
    groups: Sequence[GroupMetrics],
    cells: Mapping[Any, Any],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    group_rates: Sequence[Mapping[str, Rate]] | None = None,
    fix_origins: Sequence[str] = (),
) -> Table:
    """Edit precision, bug recall and both degeneration rates per group, next to its pass@k (``fix_origins``:
    where the minimal fixes that scored the repairs come from, said in the note).

    ``cells`` maps ``analysis.report.group_key`` to that group's ``GroupCells`` (from the sessions).
    """
    from beavertui.engine.metrics.groups import group_key

    rows: list[tuple[Cell, ...]] = []
    for n, g in enumerate(groups):
        r = group_rates[n] if group_rates is not None else _rates(g, resamples, seed)
        c = cells.get(group_key(g.model, g.protocol.as_dict(), g.corpus))
        if c is None or len(c.tasks) == 0:
            rows.append(
                (
                    g.model,
                    g.protocol.short(),
                    r["pass@k"],
                    "0",
                    Rate(None),
                    Rate(None),
                    r["degenerate"],
                    Rate(None),
                )
            )
            continue
        shares = _analysis_shares(c, resamples, seed)
        rows.append(
            (
                g.model,
                g.protocol.short(),
                r["pass@k"],
                str(c.analysed_repairs),
                shares[0],
                shares[1],
                r["degenerate"],
                shares[2],
            )
        )
    return Table(
        "Edit precision, bug recall and degeneration per model and protocol (next to pass@k)",
        (
            "model",
            "protocol",
            "pass@k",
            "repairs",
            "edit precision",
            "bug recall",
            "degenerate (speedup)",
            "degenerate (code)",
        ),
        tuple(rows),
        note="repairs: trajectories with a correct attempt, each scored at its first one. Edit precision: "
        "percent of the repair's changed lines (difflib on right-stripped lines, blank lines dropped) that "
        "fall within an edit block of the task's verified minimal fix (tolerance 1 line); bug recall: "
        "percent of the minimal fix's edit blocks the repair touches. A repair of a task without a verified "
        "minimal fix is unscored (left out of both, never scored against the reference)"
        f"{_unscored(groups, cells)}."
        + (f" The minimal fixes scored against: {'; '.join(sorted(fix_origins))}." if fix_origins else "")
        + f" Degenerate (speedup): first successes at iteration >= 2 slower "
        "than the reference (docs/metrics.md); degenerate (code): the same first successes that lost a "
        "performance feature of the reference (shared memory, tensor cores, async copies, vector loads, "
        "shuffles, parallel launch), the kernel, or their work to a library. Percent, pooled over "
        f"trajectories; [95% bootstrap interval over tasks, {resamples} resamples, seed {seed}]."
        + gated_note(groups),
        name="analysis",
    )


def _unscored(groups: Sequence[GroupMetrics], cells: Mapping[Any, Any]) -> str:
    """The note's count of unscored repairs, per group that has any."""
    from beavertui.engine.metrics.groups import group_key

    parts = []
    for g in groups:
        c = cells.get(group_key(g.model, g.protocol.as_dict(), g.corpus))
        if c is not None and c.unscored_repairs:
            parts.append(f"{g.model} {g.protocol.short()}: {c.unscored_repairs} of {c.analysed_repairs}")
    return ": unscored " + "; ".join(parts) if parts else ": none unscored"


def swing_table(entries: Sequence[Mapping[str, Any]]) -> Table:
    rows = []
    for e in entries:
        fixed = " ".join(f"{k}={v}" for k, v in e["fixed"].items())
        bounds = e.get("bounds", {})
        values = ", ".join(
            f"{k}: {'>=' if bounds.get(k) == 'lower_bound' else ''}{'-' if v is None else f'{100 * v:.1f}'}"
            for k, v in e["values"].items()
        )
        delta = f"{100 * e['delta']:+.1f}"
        rows.append((e["model"], e["axis"], e["from"], values, Rate(e["swing"]), delta, fixed))
    return Table(
        "Swing of pass@k per protocol axis",
        ("model", "axis", "from", "pass@k by value (%)", "swing (pp)", "delta (pp)", "fixed"),
        tuple(rows),
        note="swing: max minus min over the axis's values, in percentage points; delta: the last value minus "
        "the first, in axis "
        "order (p ascending, L0..L4, H1..H4, iterative then repeated, few-shot none, matched, random, curated; "
        "a pairing: second side minus first). "
        "from: runs (separate groups differing in one setting), p_sweep (one group's own sweep), pairing "
        "(a named pair declared in the sweep file). >= marks a lower bound.",
        name="swing",
    )


def few_shot_table(groups: Sequence[GroupMetrics], group_rates: Sequence[Mapping[str, Rate]]) -> Table | None:
    """The few-shot axis (the release's Exp 5), one row per group of it (swing.few_shot_arms): model, the
    other settings, strategy and K, then the group's own numbers as the main table and Table 1 give them
    (``group_rates``: each group's ``rates``, in ``groups``' order). None where no group has examples."""
    from beavertui.engine.metrics.swing import few_shot_arms, few_shot_parts

    rate_of = {id(g): r for g, r in zip(groups, group_rates, strict=True)}
    arms = few_shot_arms(groups)
    if not arms:
        return None
    rows: list[tuple[Cell, ...]] = []
    for g, rest in arms:
        r = rate_of[id(g)]
        strategy, k, seed = few_shot_parts(g.protocol.few_shot)
        proto = rest.short() + (f" [{g.corpus}]" if g.corpus else "")
        rows.append(
            (
                g.model,
                proto,
                strategy + (f" ({seed})" if seed else ""),
                str(k) if k else "-",
                str(g.n_tasks),
                r["pass@1"],
                r["pass@k"],
                r["debug"],
                Rate(g.compile_at_1),
                "-" if g.avg_iterations is None else f"{g.avg_iterations:.2f}",
            )
        )
    return Table(
        "Few-shot axis: repair rates per model, strategy and K (the release's Exp 5)",
        (
            "model",
            "protocol",
            "strategy",
            "K",
            "tasks",
            "pass@1",
            "pass@k",
            "debug@k",
            "compile@1",
            "avg iterations",
        ),
        tuple(rows),
        note="Each row is one group of the main table (protocol: its other settings, the few-shot examples "
        "aside; strategy: how the K examples were chosen, matched, random or curated; none: the group of the "
        "same settings without examples, where the source has one). Percent of tasks at the protocol's gate; "
        "[95% bootstrap interval over tasks, percentile, the main table's]. debug@k = (pass@k - pass@1) / "
        "(1 - pass@1); compile@1: first attempts that built; avg iterations: the mean iteration of the first "
        "correct attempt at p = 0, over the trajectories that have one; -: not defined. The swing table's "
        "few_shot entry gives each model's pass@k over the axis in one row (the release's exp5 table) with "
        "its max and min; the few_shot_grid table lays pass@k out as the release's exp5 table does."
        + gated_note(groups),
        keys=4,
        name="few_shot",
    )


def few_shot_grid(groups: Sequence[GroupMetrics]) -> Table | None:
    """The release's exp5 table: pass@k per model (and other settings) in one row, a column per value of
    the few-shot axis any row has (none, then matched, random, curated by K). None without few-shot groups."""
    from beavertui.engine.metrics.swing import few_shot_arms, few_shot_order

    arms = few_shot_arms(groups)
    if not arms:
        return None
    values = sorted({g.protocol.few_shot for g, _ in arms}, key=few_shot_order)
    lines: dict[tuple[str, str], dict[str, float | None]] = {}
    for g, rest in arms:
        lines.setdefault((g.model, rest.short() + (f" [{g.corpus}]" if g.corpus else "")), {})[
            g.protocol.few_shot
        ] = g.pass_at_k
    rows: tuple[tuple[Cell, ...], ...] = tuple(
        (model, proto, *(Rate(pk.get(v)) for v in values)) for (model, proto), pk in lines.items()
    )
    return Table(
        "Few-shot axis: pass@k per model and strategy_K (the release's exp5 table)",
        ("model", "protocol", *values),
        rows,
        note="Percent of tasks repaired within K attempts at the protocol's gate, each cell the pass@k of one "
        "group of the main table (intervals: the few_shot table's); -: the model has no such group. The "
        "release's table bolds each row's maximum: the swing table's few_shot entry names it (max_at)."
        + gated_note(groups),
        name="few_shot_grid",
    )


def kendall_table(entries: Sequence[Mapping[str, Any]]) -> Table:
    from beavertui.engine.metrics.table import ProtocolKey

    rows = []
    for e in entries:
        a = ProtocolKey.from_mapping(e["protocol_a"]).short()
        b = ProtocolKey.from_mapping(e["protocol_b"]).short()
        if e.get("from") == "p_sweep":
            a, b = f"{a} @p={e['p_a']:.1f}", f"{b} @p={e['p_b']:.1f}"
        tau = "-" if e["tau"] is None else f"{e['tau']:+.3f}"
        pv = "-" if e["p_value"] is None else f"{e['p_value']:.3g}"
        rows.append((a, b, e["axis"], e.get("from", "runs"), str(e["n_models"]), tau, pv))
    return Table(
        "Kendall's tau-b of model rankings between protocols",
        ("protocol A", "protocol B", "axis", "from", "models", "tau-b", "p"),
        tuple(rows),
        note="tau-b: Kendall's tau-b between the models' pass@k under protocol A and under protocol B (the "
        "models both hold, on the same corpus; @p=: pass@k at that gate of one protocol's p sweep), from -1 "
        "(rankings reversed) to +1 (the same ranking); p: its two-sided p-value (exact with no model tied and at "
        "most 33 models, or where the rankings all but agree or disagree; else the normal approximation, "
        "ties corrected). -: undefined (fewer than two models, or every model "
        "tied on one side). from: runs (protocols differing in one setting), p_sweep, pairing (as the swing "
        "table's).",
        keys=3,
        name="kendall",
    )


def breakdown_table(
    groups: Sequence[GroupMetrics],
    attribute: Mapping[str, str | None],
    name: str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Table:
    """pass@1 and pass@k per value of a task attribute (family, or the broken start's label)."""
    rows = []
    for g in groups:
        buckets: dict[str, list[int]] = defaultdict(list)
        for i, task in enumerate(g.cells.tasks):
            buckets[attribute.get(task) or "?"].append(i)
        for value in sorted(buckets):
            idx = np.asarray(buckets[value])
            means = g.cells.means[idx][:, :2]
            none = np.zeros((len(idx), 0))
            names = [g.cells.tasks[i] for i in idx]
            iv = intervals(means, none, none, resamples, seed, tasks=names)
            avg = means.mean(axis=0)
            und = g.under_sampled
            rows.append(
                (
                    g.model,
                    g.protocol.short(),
                    value,
                    str(len(idx)),
                    Rate(None if und else float(avg[0]), _f(iv.mean_lo[0]), _f(iv.mean_hi[0])),
                    Rate(None if und else float(avg[1]), _f(iv.mean_lo[1]), _f(iv.mean_hi[1])),
                )
            )
    what = {
        "family": "the task's kernel family",
        "category": "the broken start's label, as an outcome category",
        "observed category": "the category validation on the session's GPU saw the broken start fail in, "
        "where that corrected the label, else the label",
    }.get(name, name)
    return Table(
        f"Repair rates per {name}",
        ("model", "protocol", name, "tasks", "pass@1", "pass@k"),
        tuple(rows),
        note=f"Percent of the row's tasks (tasks: how many), at the protocol's gate; {name}: {what}; "
        f"[95% bootstrap interval over the row's tasks, percentile, {resamples} resamples, seed {seed}]."
        + gated_note(groups),
        keys=3,
        name="by_" + name.replace(" ", "_"),
    )


Formatter = Callable[[Rate], str]


def _usage_row(model: str, proto: str, g: Any) -> tuple[Cell, ...]:
    """A usage row for people: "3.2k" tokens, "$0.0069"."""
    from beavertui.engine.session.usage import dollars, reasoning_text, tokens_text

    u = g.usage
    reported = u.replies - u.unreported
    at_least = ">=" if g.partial_cost else ""  # some replies unpriced: the sum of the priced ones

    def usd(x: float | None) -> str:
        return dollars(x) if x is None else at_least + dollars(x)

    return (
        model,
        proto,
        str(g.sessions),
        str(g.repaired),
        f"{reported}/{u.replies}",
        tokens_text(u.prompt_tokens) if reported else "-",
        tokens_text(u.completion_tokens) if reported else "-",
        reasoning_text(u),
        usd(u.cost_usd),
        usd(g.cost_per_session),
        usd(g.cost_per_repair),
        str(u.cached),
        usd(u.paid_usd) if u.cached else usd(u.cost_usd),
    )


def _usage_machine_row(model: str, proto: str, g: Any) -> tuple[Cell, ...]:
    """A usage row for a program: one number a cell, empty where unknown."""

    def number(x: float | None) -> str:
        return "" if x is None else f"{x:.6g}"

    u = g.usage
    reported = u.replies - u.unreported
    counts = (u.prompt_tokens, u.completion_tokens)
    return (
        model,
        proto,
        str(g.sessions),
        str(g.repaired),
        str(u.replies),
        str(reported),
        *(str(n) if reported else "" for n in counts),
        str(u.reasoning_tokens) if u.reasoning_reported else "",
        str(u.reasoning_reported),
        str(g.unpriced),
        number(u.cost_usd),
        number(g.cost_per_session),
        number(g.cost_per_repair),
        str(u.cached),
        number(u.paid_usd if u.cached else u.cost_usd),
    )


def _usage_unknowns(seen: Sequence[Any], machine: bool) -> str:
    """What the usage table's note says of token counts an endpoint did not send."""
    silent = (
        " An endpoint sent no token counts for some replies (usage reported below all): their tokens and cost "
        "are unknown, not zero, and in no sum (a server may send none in a stream; --no-stream asks for whole "
        "replies, which usually carry them)."
        if any(g.unreported_by_endpoint for g in seen)
        else ""
    )
    unthinking = (
        " An endpoint gave token counts without a reasoning count for some replies: their reasoning tokens are "
        "unknown, not 0, and in no sum ("
        + (
            "reasoning tokens: the sum over the replies with a reasoning count, empty where none had one; "
            "replies with reasoning counts: how many)."
            if machine
            else "n/a: no reply of the row reported one; >=: the sum over those that did)."
        )
        if any(g.usage.reasoning_unreported for g in seen)
        else ""
    )
    return silent + unthinking


def usage_table(groups: Sequence[GroupMetrics], usage: Mapping[Any, Any], *, machine: bool = False) -> Table:
    """Tokens and cost per group (``usage`` maps analysis.report.group_key to engine.metrics.usage.GroupUsage),
    and the run's total when there is more than one group. ``machine``: for a program (CSV), one number a
    cell ("3200", "0.0069"), empty where unknown, the unit in the column's name, where people read "3.2k"
    and "$0.0069"."""
    from beavertui.engine.metrics.groups import group_key
    from beavertui.engine.metrics.usage import total

    make = _usage_machine_row if machine else _usage_row
    rows = []
    seen = {}
    for gm in groups:
        key = group_key(gm.model, gm.protocol.as_dict())
        g = usage.get(key)
        if g is not None:
            seen[key] = g
            rows.append(make(gm.model, gm.protocol.short(), g))
    if len(seen) > 1:
        rows.append(make("whole run", "", total(seen)))
    unknown = _usage_unknowns(list(seen.values()), machine)
    if machine:
        return Table(
            "Tokens and cost per model and protocol",
            (
                "model",
                "protocol",
                "sessions",
                "repaired",
                "replies",
                "replies with token counts",
                "prompt tokens",
                "completion tokens",
                "reasoning tokens",
                "replies with reasoning counts",
                "replies without a price",
                "cost (USD)",
                "per session (USD)",
                "per repair (USD)",
                "cached replies",
                "paid (USD)",
            ),
            tuple(rows),
            note="Every reply counts, those of redone attempts too, and every session the models were asked "
            "for (sessions), those in no rate too. Token counts: the sums the endpoint gave "
            "(empty where no reply of the row gave any); reasoning tokens are part of the completion tokens. "
            "Cost at the prices of the models file (empty without prices), summed over the replies that have one: "
            "where replies without a price sit beside priced ones (a priced planner beside an unpriced coder) it "
            "is a lower bound; per repair: cost over the sessions "
            "that passed. cached replies: served by the reply cache, not asked again; paid: cost less those."
            + unknown,
            name="usage",
        )
    return Table(
        "Tokens and cost per model and protocol",
        (
            "model",
            "protocol",
            "sessions",
            "repaired",
            "usage reported",
            "prompt tokens",
            "completion tokens",
            "reasoning",
            "cost",
            "per session",
            "per repair",
            "cached replies",
            "paid",
        ),
        tuple(rows),
        note="Every reply counts, those of redone attempts too, and every session the models were asked for "
        "(sessions), those in no rate too. usage reported: replies whose endpoint "
        "gave token counts, of all; reasoning tokens are part of the completion tokens. Cost at the prices "
        "of the models file (US dollars; - without prices); >=: a lower bound, the sum over the priced replies "
        "where others have no price (a priced planner beside an unpriced coder); per repair: cost over the "
        "sessions that passed. cached replies: served by the reply cache, not asked again; paid: cost less those."
        + unknown,
        name="usage",
    )
