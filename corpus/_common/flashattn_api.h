// flashattn_api.h: the public interface of the flashattn_v2 tasks (FlashAttention-2 forward).
//
// A solution defines exactly this function (C++ linkage) in solution.cu; the harness (flashattn.cuh)
// calls it. Layout: q, k, v and o are [batch, heads, seqlen, head_dim] contiguous tensors of `dtype`
// (no padding between rows or heads); o = softmax(q k^T / sqrt(head_dim) [+ causal mask]) v, with the
// softmax over the key axis and, when `causal`, key j masked out for query i whenever j > i.
// head_dim is 64 or 128. The work is enqueued on `stream`; the function does not synchronise.
#pragma once

#include <cuda_runtime.h>

enum class DType : int { kFloat16 = 0, kBFloat16 = 1 };

void flash_attn_fwd(const void* q, const void* k, const void* v, void* o, int batch, int heads, int seqlen,
                    int head_dim, bool causal, DType dtype, cudaStream_t stream);
