// Harness configuration: fp16 rows of 2048 columns; correctness 4096 rows, timing 65536 rows.
#include "layernorm.cuh"

int main(int argc, char** argv) {
    return layernorm_task::run<__half>(argc, argv, {4096, 2048}, {65536, 2048});
}
