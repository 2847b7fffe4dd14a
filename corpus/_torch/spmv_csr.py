"""Sparse matrix times vector, CSR, fp32 (corpus family "spmv_csr"), through torch.sparse (cuSPARSE).

The matrix follows the harness's generator: 4% of the rows empty, the others of log-normal length (sigma 1,
mean mean_len) capped at min(2048, cols); half of them banded around the diagonal (one of each pair of
columns in a window of 2L), the rest spread (one column in each of L equal strata of the columns);
values uniform in [-1, 1). The same distribution, not the same matrix (other random numbers)."""

import math

import torch


class Model(torch.nn.Module):
    def __init__(self, rows, cols):
        super().__init__()
        self.size = (rows, cols)

    def forward(self, row_ptr, col_idx, values, x):
        a = torch.sparse_csr_tensor(row_ptr, col_idx, values, self.size)
        return torch.mv(a, x)


def get_inputs(rows, cols, mean_len, banded=0.5):
    sigma = 1.0
    mu = math.log(mean_len) - 0.5 * sigma * sigma
    cap = min(2048, cols)
    lens = torch.exp(mu + sigma * torch.randn(rows, dtype=torch.float64)).round().clamp(1, cap).long()
    lens[torch.rand(rows) < 0.04] = 0
    band = (torch.rand(rows) < banded) & (2 * lens <= cols)
    row_ptr = torch.zeros(rows + 1, dtype=torch.long)
    row_ptr[1:] = torch.cumsum(lens, 0)
    nnz = int(row_ptr[-1])
    row = torch.repeat_interleave(torch.arange(rows), lens)
    j = torch.arange(nnz) - row_ptr[:-1][row]
    L = lens[row]
    diag = row * cols // rows
    start = torch.clamp(torch.clamp(diag - L, min=0), max=cols - 2 * L)
    banded_col = start + 2 * j + torch.randint(0, 2, (nnz,))
    lo = j * cols // L
    hi = (j + 1) * cols // L
    spread_col = lo + (torch.rand(nnz, dtype=torch.float64) * (hi - lo)).long().clamp(max=hi - lo - 1)
    col = torch.where(band[row], banded_col, spread_col)
    values = torch.rand(nnz) * 2 - 1
    x = torch.rand(cols) * 2 - 1
    return [row_ptr.int(), col.int(), values, x]


def get_init_inputs(rows, cols, **_):
    return [rows, cols]
