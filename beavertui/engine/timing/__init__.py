"""Speedups: interleaved timing of candidate against reference, CUPTI and ncu samples, stored baselines."""
