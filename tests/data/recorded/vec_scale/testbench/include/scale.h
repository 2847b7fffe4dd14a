#pragma once
// out[i] = s * in[i] for 0 <= i < n (device pointers).
void launch_scale(const float* in, float* out, float s, int n);
