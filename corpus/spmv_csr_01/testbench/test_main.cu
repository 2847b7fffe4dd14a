// spmv_csr_01: rectangular matrix (more rows than columns), mean row length 24.
#include "spmv_csr.cuh"

int main(int argc, char** argv) {
    return spmv_csr_harness::run(argc, argv, {300007, 120011, 24.0}, {2500003, 1000003, 24.0});
}
