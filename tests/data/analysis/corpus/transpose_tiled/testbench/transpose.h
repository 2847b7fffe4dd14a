#pragma once
// out = in^T for an n x n row-major float matrix (device pointers).
void launch_transpose(const float* in, float* out, int n);
