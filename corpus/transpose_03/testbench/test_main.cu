// transpose_03: fp32 transpose of a large matrix whose sides are not multiples of any tile.
#include "transpose.cuh"

int main(int argc, char** argv) {
    return transpose_harness::run<float>(argc, argv, {16411, 8191}, {16384, 8192});
}
