// Harness configuration: bytes, correctness n = 200000013, timing n = 536870912.
#include "histogram.cuh"

int main(int argc, char** argv) { return histogram_task::run(argc, argv, 200000013ull, 536870912ull); }
