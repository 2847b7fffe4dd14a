"""The key bar at the bottom of every screen: Textual's ``Footer``, without its leak.

Textual's ``Footer`` builds its keys again each time the screen's bindings change (a screen shown again,
the focus moving), and every ``FooterKey`` it builds binds ``compact`` to the footer
(``data_bind(compact=Footer.compact)``), which leaves a watcher entry on the long-lived footer. Textual
prunes those entries only when ``compact`` changes, which it never does here, so every key bar ever built
stayed in memory: opening and closing a session from the browser kept 12 more widgets alive each time
(about 250 KB; Textual 8.2.8, upstream issue Textualize/textual#6666). This footer drops the entries of
keys no longer on screen after each rebuild, so the number of widgets alive stays flat however long the
screen is used (tests/tui/test_long_use.py).
"""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter

#: Where Textual keeps an observed object's watchers: {reactive name: [(watching node, callback), ...]}.
_WATCHERS = "__watchers"


class Footer(TextualFooter):
    async def recompose(self) -> None:
        await super().recompose()
        for watchers in getattr(self, _WATCHERS, {}).values():
            watchers[:] = [(node, callback) for node, callback in watchers if node.is_attached]
