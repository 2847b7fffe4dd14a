"""Sum of n floats (corpus family "reduce"), fp32."""

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.sum()


def get_inputs(n):
    return [torch.rand(n, dtype=torch.float32) * 2 - 1]


def get_init_inputs(**_):
    return []
