"""The engine: tasks, attempts, classification, timing, the repair loop and sessions.

Nothing under this package may import textual or rich (tests/test_layering.py checks it): the engine
is shared by the headless console, the TUI, batch runs and the Ray executor.
"""
