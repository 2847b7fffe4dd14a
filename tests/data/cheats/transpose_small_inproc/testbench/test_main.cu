// Fixture of the adversarial suite: the corpus transpose harness (corpus/_common/transpose.cuh) at a
// small correctness size and a timing size whose launch takes well over 0.1 ms on an H200 (2 GiB moved).
#include "transpose.cuh"

int main(int argc, char** argv) {
    return transpose_harness::run<float>(argc, argv, {1027, 515}, {16384, 16384});
}
