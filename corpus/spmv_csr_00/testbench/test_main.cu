// spmv_csr_00: square matrix, mean row length 32; rows is odd (not a multiple of a block's rows).
#include "spmv_csr.cuh"

int main(int argc, char** argv) {
    return spmv_csr_harness::run(argc, argv, {200003, 200003, 32.0}, {2000003, 2000003, 32.0});
}
