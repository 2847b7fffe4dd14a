"""Compare data/out.bin with data/expected.bin (float32, relative tolerance 1e-3); print T or F and exit 0,
as the release's cudabench comparison scripts do."""
import os
import struct

if not os.path.exists("data/out.bin"):
    print("no data/out.bin")
    print("F")
    raise SystemExit(0)
got = open("data/out.bin", "rb").read()
want = open("data/expected.bin", "rb").read()
if len(got) != len(want):
    print(f"size mismatch: {len(got)} bytes, expected {len(want)}")
    print("F")
    raise SystemExit(0)
g = struct.unpack(f"{len(got) // 4}f", got)
w = struct.unpack(f"{len(want) // 4}f", want)
bad = [i for i in range(len(w)) if abs(g[i] - w[i]) > 1e-3 * (1 + abs(w[i]))]
if bad:
    i = bad[0]
    print(f"{len(bad)} of {len(w)} values differ, first at {i}: {g[i]} vs {w[i]}")
    print("F")
else:
    print("T")
