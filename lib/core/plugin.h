/* The CUDA plugin (build/lib/libaxmem_cuda.so): the CUDA backend (lib/backend/cuda/) and the
 * NCCL transport (lib/dist/comm_nccl.c), with cudart, cuBLAS(Lt) and NCCL behind them, loaded
 * only when a run asks for the GPU (--device cuda, --comm nccl). Loading those libraries costs
 * ~0.1-0.2 s and ~250 MB at start-up; a CPU run or a lookup never pays it.
 *
 * Where: $AXMEM_CUDA_PLUGIN when set, else libaxmem_cuda.so in ../lib next to the running
 * executable (/proc/self/exe: build/bin/axmem -> build/lib/), else in the executable's own
 * folder. Loaded once per process (RTLD_NOW | RTLD_LOCAL), never unloaded. The plugin's calls
 * into the lower layers (ax_errorf, ax_ctx_scratch, the grid) resolve to the executable's own
 * definitions, which it exports (SConstruct: --export-dynamic-symbol=ax_*), so the process
 * keeps one error/log state (docs/backends.md). */
#pragma once
#include <stddef.h>
#include "lib/core/status.h"

/* *out = the plugin's symbol `sym`, loading the plugin first. The error names `flag`, what asked
 * for it ("--device cuda"), the plugin's path and the loader's reason, and says what to do:
 * rebuild with CUDA, or `instead` ("--device cpu"). */
ax_status ax_cuda_plugin_sym(const char *flag, const char *instead, const char *sym, void **out);
/* path <- where the plugin would be loaded from ($AXMEM_CUDA_PLUGIN, else beside the executable);
 * 1 when a file is there (nothing is loaded) */
int ax_cuda_plugin_locate(char *path, size_t cap);
/* 1 when the plugin is loaded in this process (by an earlier ax_cuda_plugin_sym) */
int ax_cuda_plugin_loaded(void);
