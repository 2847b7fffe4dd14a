"""Analysis of finished repairs: how precise an edit was, what a repair lost, which feedback helped.

Pure functions over code text and recorded outcomes (edits, features, attribution) plus the one part that
runs the loop again from a frozen step (branch). Nothing here draws on a screen or prints; the commands
and the TUI render what these modules return.
"""
