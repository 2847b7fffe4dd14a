// Waits for a flag that nothing ever sets.
__global__ void wait_kernel(volatile int* flag) {
    while (*flag == 0) { }
}
void launch_wait(int* flag) { wait_kernel<<<1, 32>>>(flag); }
