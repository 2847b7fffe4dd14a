"""Row softmax (corpus family "softmax"): y = softmax(x) over each row of a rows x cols matrix."""

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs(rows, cols, dtype):
    return [torch.randn(rows, cols, dtype=getattr(torch, dtype)) * 4]


def get_init_inputs(**_):
    return []
