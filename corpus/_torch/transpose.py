"""Matrix transpose into a new row-major matrix (corpus family "transpose"): out = in^T, materialised."""

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.t().contiguous()


def get_inputs(rows, cols, dtype):
    return [torch.randn(rows, cols, dtype=getattr(torch, dtype))]


def get_init_inputs(**_):
    return []
