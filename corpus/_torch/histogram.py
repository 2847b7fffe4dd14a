"""256-bin histogram of n bytes (corpus family "histogram")."""

import torch


class Model(torch.nn.Module):
    def forward(self, data):
        return torch.bincount(data, minlength=256)


class GraphModel(torch.nn.Module):
    """bincount's counts from torch.histc over 256 fixed bins [0, 255], capturable (no read back to the host).

    torch.bincount reads its largest value back to the host to size its output, so a CUDA Graph cannot capture
    Model; the graph baseline replays this form instead (baselines_driver.py checks its output equal to
    Model's on the same inputs before timing it). With min=0 and max=255 fixed, byte v falls in bin
    floor(v * 256 / 255) = v for v < 255, and 255 in the last bin (histc's last bin includes max), so the bins
    are bincount's. histc counts in the input's type, float32, whose integers are exact up to 2**24 per bin.

    Exact for n <= 2**31 bytes drawn as get_inputs draws them (uniform over 0..255): a bin's count is then
    2**23 on average with a standard deviation under 2**12, over a thousand standard deviations below 2**24.
    The bundled tasks time n = 2**29 (corpus/histogram_*/input.json): 2**21 per bin on average.
    """

    def forward(self, data):
        return torch.histc(data.to(torch.float32), bins=256, min=0, max=255).to(torch.int64)


def get_inputs(n):
    return [torch.randint(0, 256, (n,), dtype=torch.uint8)]


def get_init_inputs(**_):
    return []
