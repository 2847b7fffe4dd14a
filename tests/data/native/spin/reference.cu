__global__ void wait_kernel(volatile int* flag) {
    if (threadIdx.x == 0) *flag = 1;
}
void launch_wait(int* flag) { wait_kernel<<<1, 32>>>(flag); }
