"""Dense matrix product (corpus family "gemm_tc"): C = A B, A M x K and B K x N row-major, fp32
accumulation, C in the storage type. Eager runs cuBLAS; VendorModel asks for cuBLASLt."""

import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


class VendorModel(torch.nn.Module):
    """The same product with cuBLASLt as torch's preferred BLAS library for the call."""

    def forward(self, a, b):
        prefer = torch.backends.cuda.preferred_blas_library
        before = prefer()
        prefer("cublaslt")
        try:
            return a @ b
        finally:
            prefer(before)


def get_inputs(m, n, k, dtype):
    t = getattr(torch, dtype)
    return [torch.randn(m, k, dtype=t), torch.randn(k, n, dtype=t)]


def get_init_inputs(**_):
    return []
