// transpose_02: fp32 transpose of a wide matrix.
#include "transpose.cuh"

int main(int argc, char** argv) {
    return transpose_harness::run<float>(argc, argv, {1537, 6151}, {8192, 16384});
}
