// Harness configuration: fp32, correctness n = 50000003, timing n = 268435456.
#include "reduce.cuh"

int main(int argc, char** argv) { return reduce_task::run(argc, argv, 50000003ull, 268435456ull); }
