#pragma once
// A tiny stand-in for the bundled CUTLASS (test fixture): tile sizes and a ceil-div helper.
namespace cutlass_fixture {
constexpr int kTile = 16;
__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
}  // namespace cutlass_fixture
