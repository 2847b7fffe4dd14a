"""Attention forward (corpus family "flashattn_v2"): o = softmax(q k^T / sqrt(d) [+ causal mask]) v over
[batch, heads, seqlen, head_dim] tensors, through scaled_dot_product_attention (whose eager choice on this
GPU is torch's flash kernel). VendorModel asks for cuDNN's attention."""

import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


class VendorModel(Model):
    def forward(self, q, k, v):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


def get_inputs(batch, heads, seqlen, head_dim, causal, dtype):
    t = getattr(torch, dtype)
    return [torch.randn(batch, heads, seqlen, head_dim, dtype=t) for _ in range(3)]


def get_init_inputs(causal, **_):
    return [causal]
