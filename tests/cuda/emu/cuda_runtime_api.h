/* TEST-ONLY CUDA emulator (tests/cuda/emu/run.sh): the part of the CUDA runtime API that
 * lib/backend/cuda/ uses, on host memory, so the backend's C code and its kernels (compiled as
 * C++ with one OS thread per CUDA thread) run on a machine without a GPU. It checks the
 * kernels' logic (indexing, reductions, barriers, warp shuffles, the GEMM layout mapping), not
 * the device: memory-model races, timing and the real compiler's code are not covered. */
#pragma once
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef int cudaError_t;
enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorNotReady = 600
};
typedef void *cudaStream_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
struct cudaDeviceProp {
    char name[256];
    int major, minor;
    size_t totalGlobalMem;
};

static inline const char *cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error" : "emulated error";
}
static inline const char *cudaGetErrorName(cudaError_t e) {
    return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated";
}
static inline cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}
static inline cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}
static inline cudaError_t cudaSetDevice(int d) {
    return d == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
static inline cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d) {
    (void)d;
    memset(p, 0, sizeof *p);
    strcpy(p->name, "emulated device (tests/cuda/emu)");
    p->major = 9;
    return cudaSuccess;
}
#ifdef __cplusplus
extern "C" {
#endif
/* emu_mem.c: page-granular device memory, PROT_NONE outside device operations when
 * AX_EMU_GUARD=1 (host code touching device memory then faults where it does so) */
cudaError_t ax_emu_malloc(void **p, size_t n);
cudaError_t ax_emu_free(void *p);
int ax_emu_is_device(const void *p); /* p lies in an emulated device allocation */
void ax_emu_open(void);
void ax_emu_close(void);
#ifdef __cplusplus
}
#endif

static inline cudaError_t cudaMalloc(void **p, size_t n) {
    return ax_emu_malloc(p, n);
}
static inline cudaError_t cudaFree(void *p) {
    return ax_emu_free(p);
}
static inline cudaError_t cudaMemset(void *p, int v, size_t n) {
    ax_emu_open();
    memset(p, v, n);
    ax_emu_close();
    return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
    (void)s;
    return cudaMemset(p, v, n);
}
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                                          cudaStream_t st) {
    (void)k, (void)st;
    ax_emu_open();
    memmove(d, s, n);
    ax_emu_close();
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w,
                                            size_t h, enum cudaMemcpyKind k, cudaStream_t st) {
    (void)k, (void)st;
    if (dp < w || sp < w) return cudaErrorInvalidValue; /* as the real one */
    ax_emu_open();
    for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w);
    ax_emu_close();
    return cudaSuccess;
}
static inline cudaError_t cudaStreamCreate(cudaStream_t *s) {
    static int token;
    *s = &token;
    return cudaSuccess;
}
#define cudaStreamNonBlocking 0x1
static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    (void)flags;
    return cudaStreamCreate(s);
}
/* events (the NCCL transport orders its streams with them): streams are synchronous here, so
 * every event has happened once it is recorded */
typedef struct ax_emu_event *cudaEvent_t;
#define cudaEventDisableTiming 0x2
static inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    (void)flags;
    *e = (cudaEvent_t)malloc(1);
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
    free(e);
    return cudaSuccess;
}
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    (void)s;
    return e ? cudaSuccess : cudaErrorInvalidValue;
}
static inline cudaError_t cudaEventQuery(cudaEvent_t e) {
    return e ? cudaSuccess : cudaErrorInvalidValue;
}
static inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
    (void)s, (void)flags;
    return e ? cudaSuccess : cudaErrorInvalidValue;
}
static inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
    (void)s;
    return cudaSuccess;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    (void)s;
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void) {
    return cudaSuccess;
}
static inline cudaError_t cudaStreamQuery(cudaStream_t s) {
    (void)s;
    return cudaSuccess;
}
enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3,
};
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer, *hostPointer;
};
/* as CUDA >= 11: success for any pointer, type Unregistered for plain host memory */
static inline cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
    a->type = ax_emu_is_device(p) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    a->device = 0;
    a->devicePointer = a->type == cudaMemoryTypeDevice ? (void *)p : NULL;
    a->hostPointer = NULL;
    return cudaSuccess;
}
