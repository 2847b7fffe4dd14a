// Harness configuration: fp32, correctness n = 16777259, timing n = 134217728.
#include "scan.cuh"

int main(int argc, char** argv) { return scan_task::run<float>(argc, argv, 16777259ull, 134217728ull); }
