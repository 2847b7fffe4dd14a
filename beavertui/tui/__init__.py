"""The full-screen Textual front end: browser, session (live and replay), compare.

Screens own the state folded from the event stream and hand it down to panes as attributes; background
work (following a file, running the loop) happens in workers that post messages. Nothing here writes a
session file or decides a category: the engine does that.
"""
