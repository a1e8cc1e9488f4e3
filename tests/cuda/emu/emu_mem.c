/* TEST-ONLY: the emulated device memory (see cuda_runtime_api.h here). Allocations are whole
 * pages of their own; with AX_EMU_GUARD=1 they are PROT_NONE whenever no emulated device
 * operation (a kernel launch, a copy, a memset) is running, so host code that touches device
 * memory directly dies at the faulting line instead of silently working as it would on the
 * CPU backend: the model-path audit for a real GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_runtime_api.h"

typedef struct {
    void *p;
    size_t len;
} region;
static region *g_regions;
static size_t g_n, g_cap;
static int g_guard = -1, g_open;

static int guard(void) {
    if (g_guard < 0) g_guard = getenv("AX_EMU_GUARD") && *getenv("AX_EMU_GUARD") == '1';
    return g_guard;
}

static void protect_all(int prot) {
    for (size_t i = 0; i < g_n; i++)
        if (mprotect(g_regions[i].p, g_regions[i].len, prot)) {
            perror("emu: mprotect");
            abort();
        }
}

void ax_emu_open(void) {
    if (guard() && g_open++ == 0) protect_all(PROT_READ | PROT_WRITE);
}
void ax_emu_close(void) {
    if (guard() && --g_open == 0) protect_all(PROT_NONE);
}

cudaError_t ax_emu_malloc(void **out, size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (n + page - 1) / page * page;
    void *p =
        mmap(NULL, len ? len : page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return cudaErrorMemoryAllocation;
    memset(p, 0xA5, len); /* poison: the backend must zero what it promises zeroed */
    if (g_n == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 64;
        g_regions = realloc(g_regions, g_cap * sizeof *g_regions);
    }
    g_regions[g_n++] = (region){p, len ? len : page};
    if (guard() && !g_open) mprotect(p, len ? len : page, PROT_NONE);
    *out = p;
    return cudaSuccess;
}

cudaError_t ax_emu_free(void *p) {
    for (size_t i = 0; i < g_n; i++)
        if (g_regions[i].p == p) {
            munmap(p, g_regions[i].len);
            g_regions[i] = g_regions[--g_n];
            return cudaSuccess;
        }
    return p ? cudaErrorInvalidValue : cudaSuccess;
}

int ax_emu_is_device(const void *p) {
    const char *c = p;
    for (size_t i = 0; i < g_n; i++)
        if (c >= (const char *)g_regions[i].p &&
            c < (const char *)g_regions[i].p + g_regions[i].len)
            return 1;
    return 0;
}
