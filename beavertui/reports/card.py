"""The evaluation card: everything needed to reproduce a published number, as Markdown.

It gathers what the session headers and the run manifest recorded (protocols, corpus and its validation,
models and endpoints, seeds, tool version, GPU and host); what was not recorded is said to be unknown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from beavertui.engine.fileio import parse_json
from beavertui.engine.metrics.attempts import run_sessions
from beavertui.engine.metrics.bootstrap import RESAMPLES, SEED
from beavertui.engine.metrics.compute import GroupMetrics
from beavertui.engine.session.events import SessionHeader


def _headers(root: Path) -> list[SessionHeader]:
    """The headers of the sessions the attempts table counts (the one reader policy; it says what it left out)."""
    return [read.header for read in run_sessions(root)]


def card(
    source: Path,
    groups: Sequence[GroupMetrics],
    tool_version: str,
    usage: dict[Any, Any] | None = None,
    headers: Sequence[SessionHeader] | None = None,
    left_out: Sequence[str] = (),
) -> str:
    """The card; ``usage`` (engine.metrics.usage.run_usage) and, for a run directory, the sessions'
    ``headers`` are read from the sessions when not given (service.metrics.compute gives both).
    ``left_out``: what every table of the metrics says it left out (service.metrics.Report.notes), listed
    under Exclusions."""
    manifest: dict[str, Any] = {}
    in_run: list[SessionHeader] = []
    if source.is_dir():
        manifest = _manifest(source)
        in_run = list(headers) if headers is not None else _headers(source)
    headers = in_run
    lines = ["# Evaluation card", ""]
    lines.append(f"- Source: `{source}`")
    lines.append(f"- beavertui (metrics): {tool_version}")
    versions = sorted({h.tool_version for h in headers})
    lines.append(
        f"- beavertui (sessions): {', '.join(versions) if versions else 'unknown (attempts table only)'}"
    )
    if manifest:
        lines.append(f"- Run id: {manifest.get('run_id', '?')}; created {manifest.get('created', '?')}")
        if manifest.get("command"):
            lines.append(f"- Command: `{manifest['command']}`")
    lines += _protocol_lines(groups, headers)
    lines += _corpus_lines(groups, headers, manifest)
    lines += _model_lines(groups, headers)
    lines += _cost_lines(source, groups, headers, usage)
    lines += _baseline_lines(headers)
    lines += _seed_lines(headers)
    lines += _hardware_lines(headers, manifest)
    lines += _exclusion_lines(groups, left_out)
    return "\n".join(lines) + "\n"


def _manifest(run: Path) -> dict[str, Any]:
    """The run's run.json ({} where it has none or it does not parse)."""
    mpath = run / "run.json"
    if mpath.is_file():
        try:
            manifest: dict[str, Any] = parse_json(mpath.read_text(encoding="utf-8"))
            return manifest
        except ValueError:
            return {}
    return {}


def _protocol_lines(groups: Sequence[GroupMetrics], headers: Sequence[SessionHeader]) -> list[str]:
    """## Protocols: each one the groups ran, and the full settings the sessions recorded."""
    lines = ["", "## Protocols", ""]
    for p in sorted({g.protocol for g in groups}):
        lines.append(f"- {p.short()}: `{json.dumps(p.as_dict())}`")
    full = {h.protocol.model_dump_json() for h in headers}
    for text in sorted(full):
        lines.append(f"  - full settings: `{text}`")
    return lines


def _corpus_lines(
    groups: Sequence[GroupMetrics], headers: Sequence[SessionHeader], manifest: dict[str, Any]
) -> list[str]:
    """## Corpus: its name, the tasks scored, its validation, the tasks left out."""
    lines = ["", "## Corpus", ""]
    corpora = sorted({h.task.corpus for h in headers})
    lines.append(f"- Corpus: {', '.join(corpora) if corpora else manifest.get('corpus', 'unknown')}")
    lines.append(f"- Tasks scored: {len({t for g in groups for t in g.cells.tasks})}")
    validation = manifest.get("validation")
    if validation:
        lines.append(f"- Validation on this GPU: {json.dumps(validation)}")
    else:
        lines.append("- Validation on this GPU: not recorded with this run")
    excluded = manifest.get("excluded_tasks")
    if excluded:
        lines.append(
            f"- Tasks left out: {len(excluded)} ({', '.join(sorted(excluded)[:10])}{' ...' if len(excluded) > 10 else ''})"
        )
    return lines


def _model_lines(groups: Sequence[GroupMetrics], headers: Sequence[SessionHeader]) -> list[str]:
    """## Models and endpoints."""
    lines = ["", "## Models and endpoints", ""]
    seen = set()
    for h in headers:
        key = h.model.model_dump_json()
        if key in seen:
            continue
        seen.add(key)
        lines.append(
            f"- {h.model.name} ({h.model.kind}) at {h.model.base_url or 'n/a'}; params {json.dumps(h.model.params, sort_keys=True)}"
        )
    if not headers:
        for m in sorted({g.model for g in groups}):
            lines.append(f"- {m} (endpoint not recorded in an attempts table)")
    return lines


def _seed_lines(headers: Sequence[SessionHeader]) -> list[str]:
    """## Seeds: the models' and the bootstrap's."""
    lines = ["", "## Seeds", ""]
    seeds = sorted({str(h.protocol.seed) for h in headers})
    lines.append(f"- Model seed(s): {', '.join(seeds) if seeds else 'unknown'}")
    lines.append(f"- Bootstrap: {RESAMPLES} resamples over tasks, percentile 95%, seed {SEED}")
    return lines


def _hardware_lines(headers: Sequence[SessionHeader], manifest: dict[str, Any]) -> list[str]:
    """## Hardware: the GPUs the sessions recorded, and the run's host."""
    lines = ["", "## Hardware", ""]
    gpus = sorted({(h.gpu.slug, h.gpu.name, h.gpu.driver, h.gpu.cuda) for h in headers if h.gpu is not None})
    for slug, name, driver, cuda in gpus:
        lines.append(f"- GPU: {name} (`{slug}`), driver {driver or '?'}, CUDA {cuda or '?'}")
    if not gpus:
        lines.append("- GPU: none recorded (recorded toolchain or attempts table only)")
    host = manifest.get("host")
    if host:
        lines.append(f"- Host: {json.dumps(host, sort_keys=True)}")
    return lines


def _exclusion_lines(groups: Sequence[GroupMetrics], left_out: Sequence[str]) -> list[str]:
    """## Exclusions: infrastructure-hit attempts, flagged successes, and what the tables left out."""
    infra = sum(g.n_infra_excluded for g in groups)
    return [
        "",
        "## Exclusions",
        "",
        f"- Attempts hit by infrastructure failures, excluded from scores: {infra}",
        "- Successes carrying an anti-cheat flag (output not written, library call, side stream, ...), "
        f"counted apart and never as successes: {sum(g.n_flagged_successes for g in groups)}",
        *(f"- {line}" for line in left_out),
    ]


def _cost_lines(
    source: Path, groups: Sequence[GroupMetrics], headers: list[SessionHeader], usage: dict[Any, Any] | None
) -> list[str]:
    """## Tokens and cost: prices, then tokens and dollars per group, per session, per repair and per run."""
    from beavertui.engine.metrics.groups import group_key
    from beavertui.engine.metrics.usage import run_usage, total
    from beavertui.engine.session.events import model_identity
    from beavertui.engine.session.usage import dollars, summary

    lines = ["", "## Tokens and cost", ""]
    if usage is None:
        usage = run_usage(source) if source.is_dir() or source.suffix == ".jsonl" else {}
    if not usage:
        return [*lines, "- Not recorded (an attempts table carries no token counts)"]
    prices = {model_identity(h.model): h.model.prices for h in headers if h.model.prices is not None}
    for name, p in sorted(prices.items()):
        lines.append(
            f"- Prices of {name}: ${p.input_per_mtok:g} per million prompt tokens, "
            f"${p.output_per_mtok:g} per million completion tokens"
        )
    for g in groups:
        u = usage.get(group_key(g.model, g.protocol.as_dict()))
        if u is None:
            continue
        lines.append(
            f"- {g.model}, {g.protocol.short()}: {summary(u.usage)}; {u.sessions} sessions, "
            f"{u.repaired} repaired; per session {dollars(u.cost_per_session)}, "
            f"per repair {dollars(u.cost_per_repair)}{_partial(u)}"
        )
    whole = total(usage)
    lines.append(
        f"- Whole run: {summary(whole.usage)}; {whole.sessions} sessions, {whole.repaired} repaired{_partial(whole)}"
    )
    unscored = whole.sessions - sum(g.n_trajectories for g in groups)
    if unscored > 0:
        lines.append(
            f"- These sums take in every session the models were asked for: {unscored} of the {whole.sessions} "
            "are in no rate (Exclusions below), their tokens and cost spent all the same"
        )
    return lines


def _baseline_lines(headers: Sequence[SessionHeader]) -> list[str]:
    """## Named baselines: what the sessions' headers recorded, per baseline: the tasks that have it, how it
    was timed and with what (docs/metrics.md, Baselines); nothing where no header recorded any."""
    from beavertui.engine.timing.named_baselines import NAMES, TITLES

    tasks: dict[str, set[str]] = {}
    how: dict[str, set[str]] = {}
    everyone: set[str] = set()
    for h in headers:
        everyone.add(h.task.id)
        for b in h.baselines:
            tasks.setdefault(b.name, set()).add(h.task.id)
            torch = re.search(r"\btorch (\S+?)(?:,|$)", b.note or "")
            how.setdefault(b.name, set()).add(b.method + (f" (torch {torch.group(1)})" if torch else ""))
    if not tasks:
        return []
    lines = [
        "",
        "## Named baselines",
        "",
        "- Stored once per GPU and recorded in each session's header when it started; a speedup against one is "
        "its median over the attempt's candidate median (docs/metrics.md, Baselines)",
    ]
    for name in NAMES:
        if name in tasks:
            measured = (
                "from its declared work" if name == "roofline" else f"timed by {', '.join(sorted(how[name]))}"
            )
            lines.append(
                f"- {name} ({TITLES[name]}): {len(tasks[name])} of {len(everyone)} tasks; {measured}"
            )
    gated = sorted({h.protocol.gate_baseline for h in headers} - {"reference"})
    if gated:
        lines.append(f"- The gate p applies to: {', '.join(gated)} (gate_baseline), not the reference")
    return lines


def _partial(u: Any) -> str:
    """Where some replies have no price beside priced ones: the dollars are a lower bound, and why."""
    if not u.partial_cost:
        return ""
    return f" (costs are lower bounds: {u.unpriced} of {u.usage.replies} replies have no price in the models file)"
