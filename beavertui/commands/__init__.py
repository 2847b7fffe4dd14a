"""One module per subcommand: argument parsing and the choice of front end, nothing more."""
