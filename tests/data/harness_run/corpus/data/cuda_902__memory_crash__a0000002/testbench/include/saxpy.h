#pragma once
// y[i] = a * x[i] + y[i] for i < n, on device pointers.
void launch_saxpy(const float* x, float* y, float a, int n);
