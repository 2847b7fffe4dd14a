#ifndef BITONIC_SORT_H
#define BITONIC_SORT_H

__global__ void k_bitonicSort(float* inputData, int size);

#endif // BITONIC_SORT_H