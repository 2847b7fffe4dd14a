"""Write a batch of small matrices A (B x M x K) and B (B x K x N) as float32 to data/."""
import random
import struct

BATCH, M, K, N = 8, 32, 48, 40
random.seed(7)
a = [random.uniform(-1, 1) for _ in range(BATCH * M * K)]
b = [random.uniform(-1, 1) for _ in range(BATCH * K * N)]
with open("data/a.bin", "wb") as f:
    f.write(struct.pack(f"{len(a)}f", *a))
with open("data/b.bin", "wb") as f:
    f.write(struct.pack(f"{len(b)}f", *b))
ref = []
for p in range(BATCH):
    for i in range(M):
        for j in range(N):
            ref.append(sum(a[p * M * K + i * K + k] * b[p * K * N + k * N + j] for k in range(K)))
with open("data/expected.bin", "wb") as f:
    f.write(struct.pack(f"{len(ref)}f", *ref))
print(f"generated batch={BATCH} M={M} K={K} N={N}")
