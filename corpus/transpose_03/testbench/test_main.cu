// transpose_03: fp32 transpose of a tall matrix.
#include "transpose.cuh"

int main(int argc, char** argv) {
    return transpose_harness::run<float>(argc, argv, {4100, 3000}, {16384, 8192});
}
