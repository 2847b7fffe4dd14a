// spmv_csr_03: square matrix, mean row length 16 (many short and empty rows).
#include "spmv_csr.cuh"

int main(int argc, char** argv) {
    return spmv_csr_harness::run(argc, argv, {300007, 300007, 16.0}, {4000003, 4000003, 16.0});
}
