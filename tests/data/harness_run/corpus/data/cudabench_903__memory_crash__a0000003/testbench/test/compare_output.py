"""Compare data/out.bin with data/expected.bin (float32, relative tolerance 1e-3)."""
import struct
import sys

got = open("data/out.bin", "rb").read()
want = open("data/expected.bin", "rb").read()
if len(got) != len(want):
    print(f"size mismatch: {len(got)} bytes, expected {len(want)}")
    sys.exit(1)
g = struct.unpack(f"{len(got) // 4}f", got)
w = struct.unpack(f"{len(want) // 4}f", want)
bad = [i for i in range(len(w)) if abs(g[i] - w[i]) > 1e-3 * (1 + abs(w[i]))]
if bad:
    i = bad[0]
    print(f"Output mismatch: {len(bad)} of {len(w)} values differ, first at {i}: {g[i]} vs {w[i]}")
    sys.exit(1)
print("Output matches")
