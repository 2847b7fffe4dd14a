// gemm_tc_04: fp16 GEMM with M, N and K tails.
#include "gemm_tc.cuh"

int main(int argc, char** argv) {
    return gemm_tc_harness::run<__half>(argc, argv, {1100, 968, 1064}, {4096, 4096, 4096});
}
