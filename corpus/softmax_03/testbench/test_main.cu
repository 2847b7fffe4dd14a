// Harness configuration: fp16 rows of 1000 columns; correctness 4096 rows, timing 131072 rows.
#include "softmax.cuh"

int main(int argc, char** argv) {
    return softmax_task::run<__half>(argc, argv, {4096, 1000}, {131072, 1000});
}
