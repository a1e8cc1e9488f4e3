/* axmem version [--devices]: what this build is and can run on, for bug reports and for checking
 * a GPU machine before a long job (the commit, build flavour, BLAS, CUDA plugin and NCCL). */
#include "cli/commands.h"
#include "lib/backend/backend.h"
#include "lib/core/plugin.h"
#include "lib/dist/comm.h"

#include <dnnl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef AX_GIT_COMMIT /* SConscript defines it from `git describe` */
#define AX_GIT_COMMIT "unknown"
#endif
#ifndef AX_BUILD_MODE
#define AX_BUILD_MODE "unknown"
#endif

static void usage(FILE *f) {
    fprintf(f, "usage: axmem version [--devices]\n\n"
               "Prints the build: commit, flavour, compiler, CPU backend (oneDNN), whether the\n"
               "CUDA backend was built and where its plugin is, and the NCCL transport.\n\n"
               "  --devices   also load the CUDA plugin and list the GPUs this process sees\n"
               "              (fails, naming the plugin, where it cannot be loaded)\n");
}

int ax_cmd_version(int argc, char **argv) {
    int devices = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--devices")) {
            devices = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "axmem version: unknown flag '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    const dnnl_version_t *dv = dnnl_version();
    printf("axmem %s (%s build, compiler %s)\n", AX_GIT_COMMIT, AX_BUILD_MODE, __VERSION__);
    printf("CPU backend: oneDNN %d.%d.%d; AVX-512 %s\n", dv->major, dv->minor, dv->patch,
#ifdef __AVX512F__
           "compiled in"
#else
           "not compiled in"
#endif
    );
    const char *cuda = ax_backend_cuda_build();
    char path[PATH_MAX + 64];
    if (!cuda) {
        printf("CUDA backend: not built (scons cuda=yes with the CUDA toolkit)\n");
    } else if (!strcmp(cuda, "plugin")) {
        int there = ax_cuda_plugin_locate(path, sizeof path);
        char real[PATH_MAX];
        if (there && realpath(path, real)) snprintf(path, sizeof path, "%s", real);
        printf("CUDA backend: plugin %s (%s)\n", path,
               there ? "present" : "MISSING: --device cuda will fail; set AXMEM_CUDA_PLUGIN");
    } else {
        printf("CUDA backend: %s\n", cuda);
    }
    printf("NCCL transport: %s\n",
           ax_comm_nccl_built() ? "built (in the CUDA plugin)" : "not built (--comm mpi only)");
    if (!devices) return 0;
    char list[4096];
    if (ax_backend_cuda_describe(list, sizeof list) != AX_OK) {
        fprintf(stderr, "axmem version --devices: %s\n", ax_error_msg());
        return 1;
    }
    printf("GPUs:\n%s", list);
    return 0;
}
