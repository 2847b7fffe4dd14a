"""Batch runs: many sessions under a scheduler that decides where (GPU, node) they run, never what."""
