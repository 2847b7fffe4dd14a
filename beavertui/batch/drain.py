"""When a GPU drained for a waiting timing stage admits runs again: patience, hangs and backfill.

A timing stage that waits for a GPU drains it: the GPU admits no new shared run, so that the runs in flight end
and the GPU is free. A drain that waits for a run whose end is not in sight does not keep the GPU's other slots
idle for it: once a run found in flight has run ``patience_s``, short runs are admitted again; a run admitted
so that runs ``hang_s`` (or twice its expected length) counts as hung, and then a long run of a session older
than every waiting timing's may start beside it. A run expected to end before those in flight is admitted
during a drain (a backfill: it delays the timing stage by nothing, as far as the expectations hold). These are
functions of the pool's state (gpu_state.py); the pool (gpu_pool.py) asks them under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass

from beavertui.batch.gpu_state import GpuState, Request


@dataclass
class Drain:
    """The drain rules of one pool."""

    patience_s: float = 10.0
    """How long a run found in flight by a waiting timing stage may run before the drain stops holding the
    GPU's other slots idle for it (a timing stage takes a few seconds; most runs less)."""
    hang_s: float = 60.0
    """How long a run admitted during a stuck drain may run before the drain counts as stuck behind it."""

    @staticmethod
    def older(req: Request, g: GpuState) -> bool:
        """Whether ``req``'s session started before every session whose timing stage waits for ``g``: only
        then may its long run start beside a hung run (a newer session's sanitizer run would hold an older
        session's timing stage for its whole length, up to minutes: finishing sessions comes first)."""
        return g.waiting_rank is None or req.rank < g.waiting_rank

    def stuck_first(self, g: GpuState, now: float) -> bool:
        """Whether the drain of ``g`` waits for a run that was in flight when it began and has been running
        at least ``patience_s``."""
        since = g.drain_since
        return since is not None and any(
            t <= since and now - t >= self.patience_s for t in g.started.values()
        )

    def hang_at(self, g: GpuState, seq: int, t: float) -> float:
        """When run ``seq`` of ``g``, granted at ``t``, counts as hung: ``hang_s`` after it began, or twice
        its expected length when it came with one and that is longer."""
        e = g.expect.get(seq)
        return t + (self.hang_s if e is None else max(self.hang_s, 2.0 * e))

    def fits(self, g: GpuState, req: Request, now: float) -> bool:
        """Whether ``req`` can run on ``g`` while it drains without delaying the timing stage: it has an
        expected length, and it is expected to end before the latest expected end of the runs in flight."""
        if g.waiting_exclusive == 0 or req.expect_s is None:
            return False
        ends = [g.started[seq] + e for seq, e in g.expect.items()]  # both kept for exactly the runs in flight
        return bool(ends) and now + req.expect_s <= max(ends)

    def stuck(self, g: GpuState, now: float) -> bool:
        """Whether the drain of ``g`` waits for a run whose end is not in sight, so that the GPU's other slots
        are not kept idle for it: a run found in flight when the drain began that has run ``patience_s``, or
        a run admitted behind such a run (``late`` 1) that has run ``hang_s`` (it hangs itself)."""
        if self.stuck_first(g, now):
            return True
        since = g.drain_since
        return since is not None and any(
            t > since and g.late.get(seq) == 1 and now >= self.hang_at(g, seq, t)
            for seq, t in g.started.items()
        )

    def hung(self, g: GpuState, now: float) -> bool:
        """Whether the drain of ``g`` waits for a run that has run ``hang_s`` (found in flight when the drain
        began, or admitted behind such a run): it is likely to run to its time limit, so a long run (a
        sanitizer) may start beside it rather than wait for it and then for the timing stage."""
        since = g.drain_since
        return since is not None and any(
            (t <= since or g.late.get(seq) == 1) and now >= self.hang_at(g, seq, t)
            for seq, t in g.started.items()
        )

    def deadline(self, gpus: list[GpuState], now: float) -> float | None:
        """Seconds until a run that a drain waits for reaches its patience or ``hang_s`` (None: no such
        moment ahead)."""
        out: float | None = None
        for g in gpus:
            if g.drain_since is None:
                continue
            for seq, t in g.started.items():
                moments: tuple[float, ...]
                if t <= g.drain_since:
                    moments = (t + self.patience_s, self.hang_at(g, seq, t))
                elif g.late.get(seq) == 1:
                    moments = (self.hang_at(g, seq, t),)
                else:
                    continue
                for m in moments:
                    if m > now:
                        out = m - now if out is None else min(out, m - now)
        return out
