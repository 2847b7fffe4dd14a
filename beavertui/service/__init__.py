"""The service layer: what a command does, with typed options, called alike by the CLI and the TUI.

``commands/`` turns flags into these options and prints; ``tui/`` builds the same options from its forms.
Nothing below ``commands/`` sees ``argparse``. Services may print nothing and import no UI library; they
return values, write files and raise ``BeaverError`` for what the user can act on.
"""
