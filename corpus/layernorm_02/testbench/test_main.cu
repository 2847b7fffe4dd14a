// Harness configuration: bf16 rows of 4096 columns; correctness 4096 rows, timing 32768 rows.
#include "layernorm.cuh"

int main(int argc, char** argv) {
    return layernorm_task::run<__nv_bfloat16>(argc, argv, {4096, 4096}, {32768, 4096});
}
