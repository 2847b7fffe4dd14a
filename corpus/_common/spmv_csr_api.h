// spmv_csr_api.h: the interface a spmv_csr solution implements (the harness includes it and calls it).
//
//   y = A * x, fp32, A a rows x cols sparse matrix in CSR form:
//   row_ptr: rows + 1 entries, row_ptr[0] == 0, row_ptr[rows] == nnz, non-decreasing; row r holds the
//            entries row_ptr[r] .. row_ptr[r+1]-1 (a row may be EMPTY: row_ptr[r] == row_ptr[r+1])
//   col_idx: nnz column indices in [0, cols), strictly increasing within a row
//   values:  nnz values, values[j] belongs to column col_idx[j]
//   x: cols entries; y: rows entries, every one of which must be written (0 for an empty row)
//
// Row lengths vary widely (many short rows, some empty, a long tail of long rows). All pointers are
// device pointers aligned to 4 bytes (no stronger alignment is promised). The call is asynchronous on
// `stream`, allocates no memory and does not synchronise the device.
#pragma once

#include <cuda_runtime.h>

void spmv_csr_f32(int rows, int cols, int nnz, const int* row_ptr, const int* col_idx, const float* values,
                  const float* x, float* y, cudaStream_t stream);
