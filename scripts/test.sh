#!/usr/bin/env bash
# Runs every test: builds release and ASan/UBSan, the Criterion unit tests under both, and
# the CLI tests (end-to-end training, resume, error messages). Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
JOBS=$(nproc)
passed=0
failed=0
skipped=0
failures=""
skips=""

step() { # step NAME COMMAND...
  local name=$1; shift
  echo "=== $name"
  local t0=$SECONDS
  if "$@"; then
    passed=$((passed + 1)); echo "--- ok: $name ($((SECONDS - t0))s)"
  else
    failed=$((failed + 1)); failures="$failures $name"; echo "--- FAILED: $name ($((SECONDS - t0))s)"
  fi
}

# step_or_skip NAME COMMAND...: like step, but exit status 77 is a skip (reported with the
# command's own reason, never counted as passed)
step_or_skip() {
  local name=$1; shift
  echo "=== $name"
  local t0=$SECONDS rc=0
  "$@" || rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); echo "--- ok: $name ($((SECONDS - t0))s)"
  elif [ "$rc" -eq 77 ]; then
    skipped=$((skipped + 1)); skips="$skips $name"; echo "--- skipped: $name"
  else
    failed=$((failed + 1)); failures="$failures $name"; echo "--- FAILED: $name ($((SECONDS - t0))s)"
  fi
}

# the CUDA op comparison: built only with CUDA (scons cuda=auto finds nvcc); without a GPU it
# prints "SKIP: no CUDA device: ..." and exits 77
cuda_ops() {
  if [ ! -x build/tests/cuda_ops_check ]; then
    echo "SKIP: CPU-only build (no nvcc): build/tests/cuda_ops_check was not built"; return 77
  fi
  build/tests/cuda_ops_check
}

step layering bash -c 'python3 scripts/check_layering.py && python3 scripts/check_layering.py --self-test'
step format bash -c 'clang-format --dry-run --Werror $(git ls-files -co --exclude-standard "*.c" "*.h")'
step build-release scons -Q -j"$JOBS"
# docs/cli.md is generated from the config tables: stale when a flag changed without it
step cli-doc bash scripts/cli_doc.sh --check build/bin/axmem
step build-asan scons -Q -j"$JOBS" mode=asan build-asan/tests/unit_tests
# Criterion forks a process per test; 2 workers on 2 cores, 1 OpenMP thread each
step unit-release env OMP_NUM_THREADS=1 build/tests/unit_tests -j2
# leaks in test code fail it (Criterion passes such tests); leaks of the runner itself do not
step unit-asan bash scripts/unit_asan.sh
step_or_skip cuda-ops cuda_ops
# the same comparison with the CUDA kernels' sources on a CPU emulator (no GPU, no nvcc needed):
# checks their logic in CI; the GPU machine's bench/device_check.sh checks the device
step cuda-emu bash tests/cuda/emu/run.sh build --quick
# train, probe and generate with --device cuda on the emulator (guarded device memory: host code
# touching it faults) against --device cpu
step cuda-emu-e2e bash tests/cuda/emu/e2e.sh build
# 2 ranks with --device cuda --comm mpi on the emulator (device buffers staged through the host)
# on 1x2x1x1, 1x1x1x2 and 2x1x1x1 against 1 rank on --device cpu
step cuda-emu-e2e-mpi bash tests/cuda/emu/e2e_mpi.sh build
# the GPU machine's check script runs its own logic with --device cpu on both sides (~30 s),
# so a lent GPU's few minutes are not spent on a broken script
step device-check-self-test bash bench/device_check.sh --self-test
step mpi bash tests/mpi/run.sh
step mpi-memscan bash tests/mpi/memscan.sh build
step mpi-dedup bash tests/mpi/dedup.sh build
step mpi-train bash tests/mpi/train.sh build/bin/axmem
step mpi-dp-train bash tests/mpi/dp_train.sh build/bin/axmem
step cli bash tests/cli/run.sh build/bin/axmem
step dedup bash tests/cli/dedup.sh build/bin/axmem
step demo bash tests/cli/demo.sh build/bin/axmem
step study bash tests/cli/study.sh build/bin/axmem
# the report in headless Chromium at 1280 and 800 px (layout measured from the DOM); skipped
# (77) only without chromium, which scripts/setup.sh installs
step_or_skip report-browser bash tests/cli/report_browser.sh build/bin/axmem
step goldfish-effect bash tests/cli/goldfish_effect.sh build/bin/axmem
step privacy bash tests/cli/privacy.sh build/bin/axmem
step over-steps bash tests/cli/over_steps.sh build/bin/axmem
step signals bash tests/cli/signals.sh build/bin/axmem
step train-state bash tests/cli/train_state.sh build/bin/axmem
step dp-train bash tests/cli/dp_train.sh build/bin/axmem
step plan bash tests/cli/plan.sh build/bin/axmem
step arch bash tests/cli/arch.sh build/bin/axmem
step hf-arch bash tests/cli/hf_arch.sh build/bin/axmem
step index-scale bash bench/index_scale.sh --quick build
# every file reader under libFuzzer (ASan+UBSan) for 10 s each, from the committed seeds
step build-fuzz scons -Q -j"$JOBS" fuzz=yes
step fuzz bash tests/fuzz/run.sh 10

echo
[ -n "$failures" ] && echo "failed:$failures"
[ -n "$skips" ] && echo "skipped (not passed):$skips"
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
