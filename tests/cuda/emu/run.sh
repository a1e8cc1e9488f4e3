#!/usr/bin/env bash
# Runs tests/cuda/cuda_ops_check (every op, CUDA vs CPU) against the CUDA backend's own sources
# on a machine WITHOUT a GPU: the kernels (lib/backend/cuda/*.cu) are compiled as C++ against
# the test-only emulator headers of this folder (one OS thread per CUDA thread, barriers for
# __syncthreads and warp shuffles; cuBLAS as a reference column-major loop), the backend's C
# files against the emulated runtime. It checks the kernels' logic and the table; it says
# nothing about speed, the device memory model or the real compiler (the GPU machine's
# bench/device_check.sh does). Needs a release build first (scons), for the CPU objects.
#
#   bash tests/cuda/emu/run.sh [BUILD [ARGS]]   BUILD = build; ARGS for cuda_ops_check (--quick)
#                                                exit status: cuda_ops_check's
set -euo pipefail
cd "$(dirname "$0")/../../.."
B=${1:-build}
shift || true
E=$B/cuda-emu
mkdir -p "$E"
rm -f "$E"/*.o # objects of sources since removed must not be linked
CFLAGS=(-O1 -g -Wall -Wextra -Werror -fopenmp -D_GNU_SOURCE -DAX_HAVE_CUDA -I tests/cuda/emu -I .)
# kernels: `k<<<g, b, sh, st>>>(` -> ax_emu_launch(dim3(g), dim3(b), sh, k, ...;
# `extern __shared__ T x[];` -> a pointer to the launch's dynamic shared memory
for f in lib/backend/cuda/*.cu; do
  python3 - "$f" "$E/$(basename "${f%.cu}").cpp" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
def split_top(s):
    parts, depth, cur = [], 0, ''
    for ch in s:
        if ch in '([': depth += 1
        if ch in ')]': depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur); cur = ''
        else:
            cur += ch
    return parts + [cur]
def launch(m):
    cfg = split_top(m.group(2))
    g, b = cfg[0], cfg[1]
    sh = cfg[2] if len(cfg) > 2 else '0'
    return f'ax_emu_launch(dim3({g}), dim3({b}), (size_t)({sh}), {m.group(1)}, '
out, n = re.subn(r'(\w+)\s*<<<(.*?)>>>\s*\(', launch, src, flags=re.S)
out = re.sub(r'extern __shared__ (\w+) (\w+)\[\];', r'\1 *\2 = (\1 *)ax_emu_smem();', out)
if n == 0:
    sys.exit(f'{sys.argv[1]}: no kernel launches found')
open(sys.argv[2], 'w').write(f'#line 1 "{sys.argv[1]}"\n' + out)
PY
  g++ -std=c++17 "${CFLAGS[@]}" -Wno-unused-parameter -Wno-clobbered -x c++ -c "$E/$(basename "${f%.cu}").cpp" \
    -o "$E/$(basename "${f%.cu}").o"
done
for f in lib/backend/cuda/*.c lib/backend/backend.c; do
  gcc -std=c11 "${CFLAGS[@]}" -c "$f" -o "$E/$(basename "${f%.c}").c.o"
done
gcc -std=c11 "${CFLAGS[@]}" -c tests/cuda/emu/emu_mem.c -o "$E/emu_mem.c.o"
gcc -std=c11 "${CFLAGS[@]}" -c tests/cuda/cuda_ops_check.c -o "$E/cuda_ops_check.o"
# the CPU backend and the lower layers from the release build; backend.o above replaces the
# library's selection (AX_HAVE_CUDA, with the emulated table)
EMU_BACKEND=("$E"/backend_cuda.c.o "$E"/gemm.c.o "$E"/backend.c.o "$E"/emu_mem.c.o "$E"/ops_*.o
             "$B"/lib/backend/cpu/*.o)
g++ -fopenmp -o "$E/cuda_ops_check" "$E/cuda_ops_check.o" "${EMU_BACKEND[@]}" \
  "$B/lib/libaxmem_core.a" -ldnnl -lxxhash -lzstd -lz -lm
gcc -std=c11 "${CFLAGS[@]}" -c bench/bench_attention.c -o "$E/bench_attention.o"
g++ -fopenmp -o "$E/bench_attention" "$E/bench_attention.o" "${EMU_BACKEND[@]}" \
  "$B/lib/libaxmem_core.a" -ldnnl -lxxhash -lzstd -lz -lm
# the CLI on the emulated device too, for end-to-end runs by hand (AX_EMU_GUARD=1 makes host
# code that touches device memory fault where it does):
#   AX_EMU_GUARD=1 build/cuda-emu/axmem train ... --device cuda
rm -f "$E/libaxmem_backend_emu.a" "$E/libaxmem_dist_emu.a"
ar rcs "$E/libaxmem_backend_emu.a" "${EMU_BACKEND[@]}"
# lib/dist without the NCCL transport (the release build's has it where NCCL is installed, and
# it calls the real CUDA runtime): device buffers take the host-staged MPI path (--comm mpi)
DIST=()
for f in lib/dist/*.c; do
  [ "$(basename "$f")" = comm_nccl.c ] && continue
  gcc -std=c11 -O1 -g -Wall -Wextra -Werror -fopenmp -D_GNU_SOURCE -I . $(mpicc --showme:compile) \
    -c "$f" -o "$E/dist_$(basename "${f%.c}").o"
  DIST+=("$E/dist_$(basename "${f%.c}").o")
done
ar rcs "$E/libaxmem_dist_emu.a" "${DIST[@]}"
CLI=()
for f in cli/*.c; do CLI+=("$B/cli/$(basename "${f%.c}").o"); done # not stale objects
# every library scons built above the backend (a new folder needs no edit here), as one group:
# the emulated backend and transport replace lib/backend and lib/dist below them
APP=()
for l in "$B"/lib/libaxmem_*.a; do
  case $(basename "$l") in
    libaxmem_backend.a | libaxmem_dist.a | libaxmem_core.a | libaxmem_*support.a) ;;
    *) APP+=("$l") ;;
  esac
done
g++ -fopenmp -o "$E/axmem" "${CLI[@]}" -Wl,--start-group "${APP[@]}" -Wl,--end-group \
  "$E/libaxmem_backend_emu.a" "$E/libaxmem_dist_emu.a" "$B/lib/libaxmem_core.a" $(mpicc --showme:link) \
  -ldnnl -lxxhash -lzstd -lz -lm
# and axmem-nccl: lib/dist WITH the NCCL transport (lib/dist/comm_nccl.c, AX_HAVE_NCCL) on the
# NCCL stand-in of this folder (nccl.h, nccl_emu.c: NCCL's calls carried out over MPI), linked in
# instead of loaded from the plugin (emu_plugin.c): tests/cuda/emu/e2e_mpi.sh runs --comm nccl
# with it
NDIST=()
for f in lib/dist/*.c tests/cuda/emu/nccl_emu.c tests/cuda/emu/emu_plugin.c; do
  gcc -std=c11 -O1 -g -Wall -Wextra -Werror -fopenmp -D_GNU_SOURCE -DAX_HAVE_NCCL \
    -I tests/cuda/emu/c -I tests/cuda/emu -I . $(mpicc --showme:compile) \
    -c "$f" -o "$E/nccl_$(basename "${f%.c}").o"
  NDIST+=("$E/nccl_$(basename "${f%.c}").o")
done
g++ -fopenmp -rdynamic -o "$E/axmem-nccl" "${CLI[@]}" -Wl,--start-group "${APP[@]}" -Wl,--end-group \
  "$E/libaxmem_backend_emu.a" "${NDIST[@]}" "$B/lib/libaxmem_core.a" $(mpicc --showme:link) \
  -ldnnl -lxxhash -lzstd -lz -lm
# tests/mpi/mpi_stage.c on the same: every collective of the NCCL transport on every axis
gcc -std=c11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -DAX_STAGE_NCCL -I tests/cuda/emu/c \
  -I tests/cuda/emu -I . $(mpicc --showme:compile) -c tests/mpi/mpi_stage.c -o "$E/mpi_stage_nccl.o"
# (the backend for the emulated device memory)
g++ -fopenmp -rdynamic -o "$E/mpi_stage-nccl" "$E/mpi_stage_nccl.o" "${NDIST[@]}" \
  "$E/libaxmem_backend_emu.a" "$B/lib/libaxmem_core.a" $(mpicc --showme:link) -ldnnl -lm
echo "emu: bench_attention at a tiny shape (that the benchmark runs; its times mean nothing here)"
AX_EMU_GUARD=1 OMP_NUM_THREADS=1 "$E/bench_attention" 1 1 33 2 16
echo "emu: cuda_ops_check on the emulated device, device memory guarded (AX_EMU_GUARD=1)"
AX_EMU_GUARD=1 OMP_NUM_THREADS=1 "$E/cuda_ops_check" "$@"
