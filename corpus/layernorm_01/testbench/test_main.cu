// Harness configuration: fp32 rows of 4095 columns; correctness 4096 rows, timing 16384 rows.
#include "layernorm.cuh"

int main(int argc, char** argv) {
    return layernorm_task::run<float>(argc, argv, {4096, 4095}, {16384, 4095});
}
