// Harness configuration: fp32 rows of 4096 columns; correctness 2048 rows, timing 16384 rows.
#include "softmax.cuh"

int main(int argc, char** argv) {
    return softmax_task::run<float>(argc, argv, {2048, 4096}, {16384, 4096});
}
