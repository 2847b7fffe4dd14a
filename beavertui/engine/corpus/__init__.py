"""Tasks and corpora: task values, their metadata files, loading both layouts, and validation on a GPU."""
