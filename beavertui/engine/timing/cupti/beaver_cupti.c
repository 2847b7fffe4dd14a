/*
 * beaver_cupti.c: a CUPTI activity injection library for timing the kernels of an unmodified program.
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH; the driver calls InitializeInjection() when
 * the process initialises CUDA. It enables kernel activity records and, as buffers complete and at exit,
 * appends one line per kernel to the file named by BEAVER_CUPTI_OUT (stderr if unset):
 *     K <tab> start_ns <tab> end_ns <tab> pid <tab> kernel name
 * and marks of the process's phases on the monotonic clock (the clock of Python's time.monotonic()):
 *     M <tab> init|gate|go|exit <tab> ns
 * and, where kernels are recorded, the CUPTI clock of the kernel records read beside the monotonic clock,
 * when CUPTI is set up and again at exit (so that a record's time can be placed among the marks):
 *     C <tab> cupti_ns <tab> monotonic_ns
 * It changes nothing in the program and never prints to stdout.
 *
 * BEAVER_GATE names a folder: the process then waits inside InitializeInjection, before CUDA has made any
 * context, until a file named "go" exists in it (a folder, so that a sandbox that keeps the paths named in
 * the environment shows the process a file made after it started). That is a run started ahead of its
 * turn: what comes before the process's first CUDA call overlaps the run before it, and the GPU still sees
 * one timed process at a time. It exits with status 97 when the file has not appeared within
 * BEAVER_GATE_S seconds (default 600). BEAVER_CUPTI_ACTIVITY=0 records no kernels (the gate and the marks
 * only: a harness that times itself).
 */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static long long beaver_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void beaver_mark(const char *what) {
    fprintf(beaver_out, "M\t%s\t%lld\n", what, beaver_now_ns());
    fflush(beaver_out);
}

/* Wait for BEAVER_GATE/go, polling every millisecond; exit 97 past BEAVER_GATE_S. */
static void beaver_gate(void) {
    const char *dir = getenv("BEAVER_GATE");
    if (!dir || !*dir) return;
    char go[4096];
    if (snprintf(go, sizeof go, "%s/go", dir) >= (int)sizeof go) {
        fprintf(beaver_out, "E\tBEAVER_GATE too long\n");
        fflush(beaver_out);
        _exit(97);
    }
    const char *limit_s = getenv("BEAVER_GATE_S");
    double limit = limit_s ? atof(limit_s) : 600.0;
    if (!(limit > 0)) limit = 600.0;
    long long until = beaver_now_ns() + (long long)(limit * 1e9);
    beaver_mark("gate");
    struct timespec ms = {0, 1000000L};
    while (access(go, F_OK) != 0) {
        if (beaver_now_ns() > until) {
            fprintf(beaver_out, "E\tno go within %g s (%s)\n", limit, go);
            fflush(beaver_out);
            _exit(97);
        }
        nanosleep(&ms, NULL);
    }
    beaver_mark("go");
}

/* The CUPTI timestamp (the clock of the kernel records) and the monotonic time at that moment (the middle of
   two monotonic reads around it). */
static void beaver_clock(void) {
    uint64_t cupti_ns = 0;
    long long before = beaver_now_ns();
    if (cuptiGetTimestamp(&cupti_ns) != CUPTI_SUCCESS) return;
    long long after = beaver_now_ns();
    fprintf(beaver_out, "C\t%llu\t%lld\n", (unsigned long long)cupti_ns, before + (after - before) / 2);
    fflush(beaver_out);
}

static void beaver_at_exit(void) {
    if (beaver_ready) {
        cuptiActivityFlushAll(1);
        beaver_clock();
    }
    if (beaver_out) beaver_mark("exit");
}

int InitializeInjection(void) {
    static int called = 0;
    if (called) return 1; /* the driver calls it once; nothing is set up twice */
    called = 1;
    const char *path = getenv("BEAVER_CUPTI_OUT");
    beaver_out = path ? fopen(path, "a") : NULL;
    if (!beaver_out) beaver_out = stderr;
    beaver_mark("init");
    beaver_gate();
    /* The exit handler (the last records, then the exit mark) is registered after CUPTI is set up, so that
       it runs before anything CUPTI registered for its own exit; without recording, it writes the mark. */
    const char *activity = getenv("BEAVER_CUPTI_ACTIVITY");
    if (activity && strcmp(activity, "0") == 0) {
        atexit(beaver_at_exit);
        return 1;
    }
    if (cuptiActivityRegisterCallbacks(beaver_buffer_requested, beaver_buffer_completed) != CUPTI_SUCCESS) {
        fprintf(beaver_out, "E\tcuptiActivityRegisterCallbacks failed\n");
        atexit(beaver_at_exit);
        return 0;
    }
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        fprintf(beaver_out, "E\tcuptiActivityEnable failed\n");
        atexit(beaver_at_exit);
        return 0;
    }
    beaver_ready = 1;
    beaver_clock();
    atexit(beaver_at_exit);
    return 1;
}
