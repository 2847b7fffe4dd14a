// transpose_01: fp16 transpose (rows and cols even, not multiples of 64 in the correctness size).
#include "transpose.cuh"

int main(int argc, char** argv) {
    return transpose_harness::run<__half>(argc, argv, {3002, 4098}, {16384, 16384});
}
