"""Adding up what a session's model calls took: tokens, waiting time, cost, replies from the reply cache.

Every Reply event counts, those of attempts that were cut and redone included (their calls were made).
Old session files without the usage fields read as replies with unreported usage. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable

from beavertui.engine.session.events import Plan, Reply, SessionEnd, Summary, Usage


def usage_of(replies: Iterable[Reply | Plan | Summary]) -> Usage:
    """The Usage of these replies (costs summed where known; None when no reply has a cost)."""
    n = prompt = completion = reasoning = unreported = reasoning_unreported = cached = 0
    latency = 0.0
    cost: float | None = None
    paid: float | None = None
    for r in replies:
        n += 1
        if r.prompt_tokens is None or r.completion_tokens is None:
            unreported += 1
        else:
            prompt += r.prompt_tokens
            completion += r.completion_tokens
            if r.reasoning_tokens is None:
                reasoning_unreported += 1
        reasoning += r.reasoning_tokens or 0
        cached += r.cached
        if not r.cached:
            latency += r.latency_s or 0.0
        if r.cost_usd is not None:
            cost = (cost or 0.0) + r.cost_usd
            if not r.cached:
                paid = (paid or 0.0) + r.cost_usd
            elif paid is None:
                paid = 0.0
    return Usage(
        replies=n,
        prompt_tokens=prompt,
        completion_tokens=completion,
        reasoning_tokens=reasoning,
        unreported=unreported,
        reasoning_unreported=reasoning_unreported,
        latency_s=round(latency, 3),
        cost_usd=cost,
        cached=cached,
        paid_usd=paid,
    )


def add(a: Usage, b: Usage) -> Usage:
    """Two usages together (a run's from its sessions')."""

    def plus(x: float | None, y: float | None) -> float | None:
        return None if x is None and y is None else (x or 0.0) + (y or 0.0)

    return Usage(
        replies=a.replies + b.replies,
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
        unreported=a.unreported + b.unreported,
        reasoning_unreported=a.reasoning_unreported + b.reasoning_unreported,
        latency_s=round(a.latency_s + b.latency_s, 3),
        cost_usd=plus(a.cost_usd, b.cost_usd),
        cached=a.cached + b.cached,
        paid_usd=plus(a.paid_usd, b.paid_usd),
    )


def session_usage(end: SessionEnd) -> Usage | None:
    """What a whole session's calls took, as its end line gives it: the coder's replies (``usage``) with the
    plans (``planner_usage``) and summaries (``summariser_usage``) a planned or L3S protocol asked for, as
    ``metrics`` counts them; None where the end line has none of them."""
    total: Usage | None = None
    for u in (end.usage, end.planner_usage, end.summariser_usage):
        if u is not None:
            total = u if total is None else add(total, u)
    return total


def tokens_text(n: int) -> str:
    """12, 3.4k, 12k, 1.2M."""
    if n < 1000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{n // 1000}k"
    return f"{n / 1e6:.1f}M"


def reasoning_text(u: Usage) -> str:
    """The reasoning tokens of a usage for a table cell: '2.1k'; 'n/a' where no reply with token counts
    reported a reasoning count (unknown, not 0); '>=2.1k' where some did not (the sum of those that did);
    '-' where no reply reported usage at all."""
    if u.replies == u.unreported:
        return "-"
    if u.reasoning_reported == 0:
        return "n/a"
    return (">=" if u.reasoning_unreported else "") + tokens_text(u.reasoning_tokens)


def dollars(x: float | None) -> str:
    """$0.0042, $0.12, $12.34; '-' when unknown."""
    if x is None:
        return "-"
    if x == 0:
        return "$0"
    if x < 0.01:
        return f"${x:.4f}"
    return f"${x:,.2f}"


def summary(u: Usage | None) -> str:
    """One line: '12.3k tokens (2.1k reasoning), $0.12, 3 of 5 replies from the cache'; 'reasoning not
    reported' where no reply with token counts gave a reasoning count."""
    if u is None or u.replies == 0:
        return "no replies"
    reported = u.replies - u.unreported
    if reported == 0:
        text = "no token counts reported"
    else:
        text = f"{tokens_text(u.tokens)} tokens ({tokens_text(u.prompt_tokens)} in, {tokens_text(u.completion_tokens)} out"
        if u.reasoning_reported == 0:
            text += ", reasoning not reported)"
        elif u.reasoning_unreported:
            text += (
                f", {tokens_text(u.reasoning_tokens)} reasoning in the {u.reasoning_reported} of {reported} "
                "replies that report it)"
            )
        else:
            text += f", {tokens_text(u.reasoning_tokens)} reasoning)" if u.reasoning_tokens else ")"
        if u.unreported:
            text += f", {u.unreported} of {u.replies} replies unreported"
    if u.cost_usd is not None:
        text += f", {dollars(u.cost_usd)}"
        if u.cached and u.paid_usd is not None:
            text += f" ({dollars(u.paid_usd)} paid)"
    if u.cached:
        text += f", {u.cached} of {u.replies} replies from the cache"
    return text
