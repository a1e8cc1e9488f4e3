#!/usr/bin/env bash
# Packs a CUDA build made here for the lent GPU machine, whose image has the CUDA toolkit,
# cuBLAS and NCCL (under PyTorch) but none of Debian's packages axmem links (oneDNN, OpenMPI,
# xxHash, zstd) and no scons, and which cannot install anything. Run here after
# `scons cuda=yes`; it writes .devbundle/ (git-ignored through .git/info/exclude):
#   .devbundle/libs.tar.xz   every shared library the binaries and OpenMPI's plugins need,
#                            except glibc's and the CUDA/NCCL ones (the GPU machine has those;
#                            the base system's, libstdc++ and the like, go in lib-fallback/),
#                            plus OpenMPI's tree (mpirun, plugins, help files) under usr/
# and the device command carries build/bin, build/lib/libaxmem_cuda.so,
# build/tests/cuda_ops_check, build/bench/bench_attention and .devbundle, then sources
# bench/device_env.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
B=.devbundle
S=$(mktemp -d /tmp/devbundle.XXXXXX)
trap 'rm -rf "$S"' EXIT
mkdir -p "$B" "$S/lib" "$S/lib-fallback" "$S/usr/bin" "$S/usr/lib/x86_64-linux-gnu"
grep -qx '/.devbundle/' .git/info/exclude 2>/dev/null || echo '/.devbundle/' >>.git/info/exclude

ompi=/usr/lib/x86_64-linux-gnu/openmpi
cp -a "$ompi" "$S/usr/lib/x86_64-linux-gnu/"
rm -rf "$S$ompi/include" "$S$ompi/lib/"*.a
cp -aL /usr/bin/orterun "$S/usr/bin/orterun"
ln -sf orterun "$S/usr/bin/mpirun"
mkdir -p "$S/usr/share" && cp -a /usr/share/openmpi "$S/usr/share/"

# the closure: every non-system library the binaries and plugins load
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libcuda\.so|libcudart|libcublas|libnccl)'
base='^(libstdc\+\+|libgcc_s|libz\.so|libudev|libuuid|libatomic|libgomp|libnuma)'
objs=(build/bin/axmem build/lib/libaxmem_cuda.so build/tests/cuda_ops_check build/bench/bench_attention
      /usr/bin/orterun
      $(find "$ompi" -name '*.so*' -type f))
for o in "${objs[@]}"; do
  ldd "$o" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  # the base system's own libraries go last on the search path: the machine's newer ones win
  if [[ $name =~ $base ]]; then cp -L "$path" "$S/lib-fallback/$name"; else cp -L "$path" "$S/lib/$name"; fi
done
tar -C "$S" -cJf "$B/libs.tar.xz" lib lib-fallback usr
du -sh "$B/libs.tar.xz"
ls "$S/lib" "$S/lib-fallback" | tr '\n' ' '
echo
