// Harness configuration: fp32 rows of 1024 columns; correctness 8192 rows, timing 65536 rows.
#include "layernorm.cuh"

int main(int argc, char** argv) {
    return layernorm_task::run<float>(argc, argv, {8192, 1024}, {65536, 1024});
}
