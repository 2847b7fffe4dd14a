// gemm_tc_03: bf16 GEMM with a rectangular correctness size.
#include "gemm_tc.cuh"

int main(int argc, char** argv) {
    return gemm_tc_harness::run<__nv_bfloat16>(argc, argv, {768, 1280, 1536}, {4096, 4096, 4096});
}
