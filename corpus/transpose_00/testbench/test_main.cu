// transpose_00: fp32 transpose; the correctness size is not a multiple of any tile.
#include "transpose.cuh"

int main(int argc, char** argv) {
    return transpose_harness::run<float>(argc, argv, {4099, 3001}, {16384, 8192});
}
