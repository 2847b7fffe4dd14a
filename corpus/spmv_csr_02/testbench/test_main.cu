// spmv_csr_02: square banded matrix (every row's columns cluster around the diagonal, as in FEM and
// stencil discretisations), mean row length 32.
#include "spmv_csr.cuh"

int main(int argc, char** argv) {
    return spmv_csr_harness::run(argc, argv, {250003, 250003, 32.0, 1.0}, {2000003, 2000003, 32.0, 1.0});
}
