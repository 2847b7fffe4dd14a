"""256-bin histogram of n bytes (corpus family "histogram")."""

import torch


class Model(torch.nn.Module):
    def forward(self, data):
        return torch.bincount(data, minlength=256)


def get_inputs(n):
    return [torch.randint(0, 256, (n,), dtype=torch.uint8)]


def get_init_inputs(**_):
    return []
