"""`corpus validate`: is each task of a corpus valid on this GPU (checks in a pool, then each reference timed alone)."""
