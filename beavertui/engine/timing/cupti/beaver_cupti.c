/*
 * beaver_cupti.c: a CUPTI activity injection library for timing the kernels of an unmodified program.
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH; the driver calls InitializeInjection() when
 * the process initialises CUDA. It enables kernel activity records and, as buffers complete and at exit,
 * appends one line per kernel to the file named by BEAVER_CUPTI_OUT (stderr if unset):
 *     K <tab> start_ns <tab> end_ns <tab> pid <tab> kernel name
 * It changes nothing in the program and never prints to stdout.
 */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BEAVER_KERNEL_T
#define BEAVER_KERNEL_T CUpti_ActivityKernel10
#endif

#define BEAVER_BUF_BYTES (4u * 1024u * 1024u)

static FILE *beaver_out = NULL;
static int beaver_ready = 0;

static void CUPTIAPI beaver_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = (uint8_t *)aligned_alloc(8, BEAVER_BUF_BYTES);
    *size = *buffer ? BEAVER_BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI beaver_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                             size_t valid) {
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *record = NULL;
    int pid = (int)getpid();
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const BEAVER_KERNEL_T *k = (const BEAVER_KERNEL_T *)record;
            fprintf(beaver_out, "K\t%llu\t%llu\t%d\t%s\n", (unsigned long long)k->start, (unsigned long long)k->end,
                    pid, k->name ? k->name : "?");
        }
    }
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(NULL, stream, &dropped);
    if (dropped) fprintf(beaver_out, "D\t%zu\n", dropped);
    fflush(beaver_out);
    free(buffer);
}

static void beaver_at_exit(void) {
    if (beaver_ready) cuptiActivityFlushAll(1);
    if (beaver_out) fflush(beaver_out);
}

int InitializeInjection(void) {
    if (beaver_ready) return 1;
    const char *path = getenv("BEAVER_CUPTI_OUT");
    beaver_out = path ? fopen(path, "a") : NULL;
    if (!beaver_out) beaver_out = stderr;
    if (cuptiActivityRegisterCallbacks(beaver_buffer_requested, beaver_buffer_completed) != CUPTI_SUCCESS) {
        fprintf(beaver_out, "E\tcuptiActivityRegisterCallbacks failed\n");
        return 0;
    }
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        fprintf(beaver_out, "E\tcuptiActivityEnable failed\n");
        return 0;
    }
    beaver_ready = 1;
    atexit(beaver_at_exit);
    return 1;
}
