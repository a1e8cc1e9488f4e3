/* Loads the CUDA plugin on demand (lib/core/plugin.h). */
#include "lib/core/plugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PLUGIN_NAME "libaxmem_cuda.so"

static void *handle; /* the loaded plugin; NULL until then (main thread, like the CLI) */

/* path <- the first candidate that exists ($AXMEM_CUDA_PLUGIN is taken as given) */
static void plugin_path(char *path, size_t cap) {
    const char *env = getenv("AXMEM_CUDA_PLUGIN");
    if (env && *env) {
        snprintf(path, cap, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(path, cap, "%s", PLUGIN_NAME); /* the loader's search path */
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    snprintf(path, cap, "%s/../lib/%s", exe, PLUGIN_NAME); /* build/bin -> build/lib */
    if (access(path, F_OK) == 0) return;
    snprintf(path, cap, "%s/%s", exe, PLUGIN_NAME); /* installed side by side */
    if (access(path, F_OK) == 0) return;
    snprintf(path, cap, "%s/../lib/%s", exe, PLUGIN_NAME); /* the one the error names */
}

int ax_cuda_plugin_locate(char *path, size_t cap) {
    plugin_path(path, cap);
    return access(path, F_OK) == 0;
}

static ax_status load(const char *flag, const char *instead) {
    if (handle) return AX_OK;
    char path[PATH_MAX + 64];
    plugin_path(path, sizeof path);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "%s: cannot load the CUDA plugin %s: %s; rebuild with scons cuda=yes "
                         "(or point AXMEM_CUDA_PLUGIN at libaxmem_cuda.so), or use %s",
                         flag, path, why ? why : "unknown reason", instead);
    }
    return AX_OK;
}

ax_status ax_cuda_plugin_sym(const char *flag, const char *instead, const char *sym, void **out) {
    *out = NULL;
    AX_CHECK(load(flag, instead));
    dlerror();
    void *p = dlsym(handle, sym);
    if (!p) {
        const char *why = dlerror();
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "%s: the CUDA plugin lacks %s (%s): it was built without it or by an "
                         "older build; rebuild with scons cuda=yes, or use %s",
                         flag, sym, why ? why : "not found", instead);
    }
    *out = p;
    return AX_OK;
}

int ax_cuda_plugin_loaded(void) {
    return handle != NULL;
}
