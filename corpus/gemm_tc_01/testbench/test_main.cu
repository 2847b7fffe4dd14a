// gemm_tc_01: bf16 GEMM whose K is not a multiple of 32 or 64 (K % 32 == 8), with M and N tails.
#include "gemm_tc.cuh"

int main(int argc, char** argv) {
    return gemm_tc_harness::run<__nv_bfloat16>(argc, argv, {1000, 1032, 1000}, {4096, 4096, 4104});
}
