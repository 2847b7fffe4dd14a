// spmv_csr_02: square matrix, mean row length 32.
#include "spmv_csr.cuh"

int main(int argc, char** argv) {
    return spmv_csr_harness::run(argc, argv, {250003, 250003, 32.0}, {2000003, 2000003, 32.0});
}
