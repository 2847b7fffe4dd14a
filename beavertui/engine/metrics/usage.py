"""Tokens and cost per (model, protocol) group of a run, from its session files.

Every reply counts (Reply events, those of redone attempts too), and every plan and feedback summary a
planner or summariser wrote (Plan, Summary: their own calls, at their own prices): what the run asked of
its endpoints. A
repair is a session that passed; cost per repair is the group's cost over its repaired sessions. Branch
sessions (analyses of a run, with a parent) are left out, as the metrics leave them out. Reads files,
computes sums; no rate here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from beavertui.engine.metrics.attempts import RunSession, run_sessions
from beavertui.engine.metrics.groups import GroupKey, group_key
from beavertui.engine.session.events import Plan, Reply, Summary, Usage, model_identity
from beavertui.engine.session.usage import add, usage_of


@dataclass(frozen=True)
class GroupUsage:
    """What one group's sessions took."""

    sessions: int
    repaired: int
    usage: Usage
    unpriced: int = 0
    """Replies (plans and summaries too) the models file gave no price for: where some others have one (a
    priced planner beside an unpriced coder), ``usage.cost_usd`` sums the priced only, a lower bound."""
    asked: int = 0
    """Replies that came from an endpoint (an OpenAI-compatible server, not a scripted or replayed model):
    those whose usage an endpoint could have reported."""

    @property
    def partial_cost(self) -> bool:
        """The cost is known for some replies only: a lower bound of what the group cost."""
        return self.usage.cost_usd is not None and self.unpriced > 0

    @property
    def cost_per_session(self) -> float | None:
        return (
            None if self.usage.cost_usd is None or not self.sessions else self.usage.cost_usd / self.sessions
        )

    @property
    def cost_per_repair(self) -> float | None:
        return (
            None if self.usage.cost_usd is None or not self.repaired else self.usage.cost_usd / self.repaired
        )

    @property
    def reported(self) -> bool:
        """Some reply of the group had a token count or a cost."""
        return self.usage.replies > self.usage.unreported or self.usage.cost_usd is not None

    @property
    def unreported_by_endpoint(self) -> bool:
        """An endpoint answered this group and reported no token counts for some of its replies (a server that
        sends no usage): its tokens and cost are unknown there, not zero."""
        return self.asked > 0 and self.usage.unreported > 0


class UsageFold:
    """``run_usage`` one session at a time: ``add`` every session the reader yields, then ``groups`` (lets
    the metrics fold the usage in the same pass over the files as the attempts table)."""

    def __init__(self) -> None:
        self.groups: dict[GroupKey, GroupUsage] = {}

    def add(self, read: RunSession) -> None:
        header, events = read.header, read.events
        if header.parent is not None:
            return
        calls = [e for e in events if isinstance(e, Reply | Plan | Summary)]
        u = usage_of(calls)
        unpriced = sum(1 for e in calls if e.cost_usd is None)
        asked = len(calls) if header.model.kind == "openai" else 0
        repaired = read.state.success
        key = group_key(model_identity(header.model), header.protocol.key())
        old = self.groups.get(key)
        self.groups[key] = (
            GroupUsage(1, int(repaired), u, unpriced, asked)
            if old is None
            else GroupUsage(
                old.sessions + 1,
                old.repaired + int(repaired),
                add(old.usage, u),
                old.unpriced + unpriced,
                old.asked + asked,
            )
        )


def run_usage(root: Path) -> dict[GroupKey, GroupUsage]:
    """Per group key (analysis.report.group_key): sessions, repaired sessions and their usage."""
    fold = UsageFold()
    for read in run_sessions(root):  # the files the attempts table reads, by the same policy
        fold.add(read)
    return fold.groups


def total(groups: dict[GroupKey, GroupUsage]) -> GroupUsage:
    """The whole run's."""
    sessions = repaired = unpriced = asked = 0
    u = Usage()
    for g in groups.values():
        sessions, repaired, u = sessions + g.sessions, repaired + g.repaired, add(u, g.usage)
        unpriced += g.unpriced
        asked += g.asked
    return GroupUsage(sessions, repaired, u, unpriced, asked)
