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
 *
 * BEAVER_KERNEL_LOCK names a lock file: the GPU is then held per call that puts work on it, not per process.
 * The library subscribes to CUPTI's driver- and runtime-API callbacks for the calls that put work on the
 * device: every launch (cuLaunch*, cudaLaunch*: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel
 * and their _ptsz forms, the legacy cuLaunch/cuLaunchGrid), cuGraphLaunch/cudaGraphLaunch (and _ptsz), and
 * every copy and fill (cuMemcpy*, cuMemset*, cudaMemcpy*, cudaMemset*: synchronous, asynchronous, 2D/3D,
 * peer, _v2/_ptds/_ptsz); not cuLaunchHostFunc (host work). Copies and fills are held too because they are
 * device work of their own: a device-to-device copy or a fill runs on the same memory as a timed kernel,
 * and a host copy's DMA writes to it, so either beside a kernel of another process would move that
 * kernel's time. The callbacks are chosen by name at start (cuptiGetCallbackName), so every variant the
 * toolkit's CUPTI knows is held. On the call's entry the library takes flock(2) on the file, LOCK_EX, or
 * LOCK_SH with BEAVER_KERNEL_LOCK_MODE=sh (default ex: a timed process; sh: a correctness run, which shares
 * the GPU with other sh holders and never with an ex holder); on the call's exit it waits for the context
 * (cuCtxSynchronize, this thread's capture mode set to relaxed around it) so that the work has finished,
 * then unlocks. A runtime call and the driver call it makes are held once (a depth count per thread), and
 * the threads of one process take the lock one at a time (a mutex: flock is per open file, and threads
 * share it). Several timed processes each holding ex then run at once on one GPU: their host work
 * overlaps, their device work never does.
 *
 * What it changes in the timed program: every held call returns only once the context's work has finished,
 * so inside the process no kernel overlaps host work or another stream's kernel, and back-to-back launches
 * get a synchronisation (and possibly a wait for another process) between them. CUPTI's kernel records
 * are device-side start and end times, so a kernel's recorded duration should not change; an A/B on a GPU
 * must show that before this is used (bench/release_timing_bench.py run --klock). Limits: work the driver
 * puts on the device by itself (module loads, a context's setup) is not held; a stream being captured into
 * a graph may refuse the synchronisation, whose failure is written once as an E line (the launch itself is
 * not affected). A lock asked for and not set up (the file cannot be opened, a mode other than ex or sh, no
 * CUPTI subscriber) ends the process with status 98 and an E line: it would otherwise run unheld beside
 * the others. At exit the library writes
 *     L <tab> calls held <tab> ns waiting for the lock <tab> ns holding it
 * With BEAVER_KERNEL_LOCK unset or empty none of this is set up and the library does what it did before.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* ---- the kernel lock (BEAVER_KERNEL_LOCK) ---- */

static int beaver_lock_fd = -1;
static int beaver_lock_op = LOCK_EX;
static pthread_mutex_t beaver_lock_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int beaver_lock_depth = 0;
static long long beaver_lock_calls = 0, beaver_lock_wait_ns = 0, beaver_lock_held_ns = 0, beaver_lock_since = 0;
static int beaver_sync_failed = 0;
static CUresult (*beaver_ctx_sync)(void) = NULL;
static CUresult (*beaver_capture_mode)(CUstreamCaptureMode *) = NULL;
static CUpti_SubscriberHandle beaver_subscriber;

/* Whether a driver or runtime API call of this name puts work on the device and is held (1) or not (0). */
int beaver_lock_wants(const char *name) {
    static const char *const held[] = {"cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset",
                                       "cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset"};
    if (!name) return 0;
    if (strncmp(name, "cuLaunchHostFunc", 16) == 0 || strncmp(name, "cudaLaunchHostFunc", 18) == 0) return 0;
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        if (strncmp(name, held[i], strlen(held[i])) == 0) return 1;
    return 0;
}

/* Open the lock file and set the mode; 0 when done, -1 (with an E line) when not. */
int beaver_lock_open(const char *path, const char *mode) {
    if (mode && *mode && strcmp(mode, "ex") != 0 && strcmp(mode, "sh") != 0) {
        fprintf(beaver_out ? beaver_out : stderr, "E\tBEAVER_KERNEL_LOCK_MODE %s: expected ex or sh\n", mode);
        return -1;
    }
    beaver_lock_op = (mode && strcmp(mode, "sh") == 0) ? LOCK_SH : LOCK_EX;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) fd = open(path, O_RDONLY | O_CLOEXEC); /* a read-only bind of the file: flock works on it */
    if (fd < 0) {
        fprintf(beaver_out ? beaver_out : stderr, "E\tcannot open BEAVER_KERNEL_LOCK %s\n", path);
        return -1;
    }
    beaver_lock_fd = fd;
    return 0;
}

/* Take the lock for this process's calls (the mutex, then flock), counting the wait. */
void beaver_lock_take(void) {
    long long t0 = beaver_now_ns();
    pthread_mutex_lock(&beaver_lock_mu);
    while (flock(beaver_lock_fd, beaver_lock_op) != 0) {
    }
    beaver_lock_since = beaver_now_ns();
    beaver_lock_wait_ns += beaver_lock_since - t0;
    beaver_lock_calls++;
}

void beaver_lock_release(void) {
    beaver_lock_held_ns += beaver_now_ns() - beaver_lock_since;
    flock(beaver_lock_fd, LOCK_UN);
    pthread_mutex_unlock(&beaver_lock_mu);
}

/* Wait until the calling thread's context has finished its work, in relaxed capture mode. */
static void beaver_lock_sync(void) {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    int exchanged = beaver_capture_mode && beaver_capture_mode(&mode) == CUDA_SUCCESS;
    CUresult rc = beaver_ctx_sync();
    if (exchanged) beaver_capture_mode(&mode);
    if (rc != CUDA_SUCCESS && !beaver_sync_failed) {
        beaver_sync_failed = 1;
        fprintf(beaver_out, "E\tkernel lock: cuCtxSynchronize returned %d\n", (int)rc);
        fflush(beaver_out);
    }
}

static void CUPTIAPI beaver_on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void *data) {
    (void)userdata;
    (void)domain;
    (void)cbid;
    const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        if (beaver_lock_depth++ == 0) beaver_lock_take();
    } else if (beaver_lock_depth > 0 && --beaver_lock_depth == 0) {
        beaver_lock_sync();
        beaver_lock_release();
    }
}

static void beaver_lock_enable(CUpti_CallbackDomain domain, uint32_t size) {
    for (uint32_t cbid = 1; cbid < size; cbid++) {
        const char *name = NULL;
        if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && beaver_lock_wants(name))
            cuptiEnableCallback(1, beaver_subscriber, domain, cbid);
    }
}

/* Set the kernel lock up when BEAVER_KERNEL_LOCK names a file; nothing otherwise. */
static void beaver_lock_setup(void) {
    const char *path = getenv("BEAVER_KERNEL_LOCK");
    if (!path || !*path) return;
    if (beaver_lock_open(path, getenv("BEAVER_KERNEL_LOCK_MODE")) != 0) {
        fflush(beaver_out);
        _exit(98); /* asked for and not there: the process would run unheld beside others */
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda) {
        beaver_ctx_sync = (CUresult(*)(void))dlsym(cuda, "cuCtxSynchronize");
        beaver_capture_mode = (CUresult(*)(CUstreamCaptureMode *))dlsym(cuda, "cuThreadExchangeStreamCaptureMode");
    }
    if (!beaver_ctx_sync || cuptiSubscribe(&beaver_subscriber, (CUpti_CallbackFunc)beaver_on_api, NULL) != CUPTI_SUCCESS) {
        fprintf(beaver_out, "E\tkernel lock: %s\n", beaver_ctx_sync ? "cuptiSubscribe failed" : "no cuCtxSynchronize");
        fflush(beaver_out);
        _exit(98);
    }
    beaver_lock_enable(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
    beaver_lock_enable(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
}

static void beaver_at_exit(void) {
    if (beaver_ready) {
        cuptiActivityFlushAll(1);
        beaver_clock();
    }
    if (beaver_out && beaver_lock_fd >= 0) {
        fprintf(beaver_out, "L\t%lld\t%lld\t%lld\n", beaver_lock_calls, beaver_lock_wait_ns, beaver_lock_held_ns);
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
    beaver_lock_setup();
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
