// gemm_tc_00: fp16 GEMM; the correctness size has M and N tails (not multiples of 128).
#include "gemm_tc.cuh"

int main(int argc, char** argv) {
    return gemm_tc_harness::run<__half>(argc, argv, {1000, 1032, 1024}, {4096, 4096, 4096});
}
