"""Building and running candidates: the seam the loop calls, the local GPU toolchain, recorded replays, one attempt's stages."""
