// gemm_tc_02: fp16 GEMM, square sizes.
#include "gemm_tc.cuh"

int main(int argc, char** argv) {
    return gemm_tc_harness::run<__half>(argc, argv, {1024, 1024, 1024}, {4096, 4096, 4096});
}
