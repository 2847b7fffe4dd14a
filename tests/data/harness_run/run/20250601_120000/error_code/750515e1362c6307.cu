import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void relu2_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = v > 0.f ? 2.f * v : 0.f; }
}

torch::Tensor relu2(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    relu2_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

ext = load_inline(
    name="relu2_ref",
    cpp_sources="torch::Tensor relu2(torch::Tensor x);",
    cuda_sources=cuda_source,
    functions=["relu2"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu2(x.contiguous())