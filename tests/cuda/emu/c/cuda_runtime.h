/* TEST-ONLY: the runtime API for C files built against the emulator (lib/dist/comm_nccl.c);
 * the kernel-side cuda_runtime.h one folder up is C++ */
#pragma once
#include "../cuda_runtime_api.h"
