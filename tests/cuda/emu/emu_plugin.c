/* TEST-ONLY: the CUDA plugin's lookup (lib/core/plugin.c) for the emulator's axmem-nccl, where
 * the NCCL transport is linked in rather than loaded: the same names resolve to this program's
 * own symbols. Linked before libaxmem_core.a, and defining all of plugin.h, so its plugin.o is
 * never pulled in. */
#include <dlfcn.h>
#include <stdio.h>

#include "lib/core/plugin.h"

ax_status ax_cuda_plugin_sym(const char *flag, const char *instead, const char *sym, void **out) {
    *out = dlsym(RTLD_DEFAULT, sym);
    if (!*out)
        return ax_errorf(AX_ERR_UNSUPPORTED, "%s: the emulator's program lacks %s; use %s", flag,
                         sym, instead);
    return AX_OK;
}

int ax_cuda_plugin_loaded(void) {
    return 1; /* the "plugin" is this program */
}

int ax_cuda_plugin_locate(char *path, size_t cap) {
    snprintf(path, cap, "(linked into this program)");
    return 1;
}
