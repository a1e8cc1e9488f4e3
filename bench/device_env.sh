# Sourced on the lent GPU machine before bench/device_check.sh --prebuilt: unpacks the
# libraries bench/device_bundle.sh packed here and points the loader, OpenMPI and axmem at
# them and at the machine's own CUDA, cuBLAS and NCCL. Prints what it found.
AXDEV=${AXDEV:-/tmp/axdev}
mkdir -p "$AXDEV"
tar -C "$AXDEV" -xJf .devbundle/libs.tar.xz 2>/dev/null ||
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .devbundle/libs.tar.xz "$AXDEV" ||
  { echo "device_env: cannot unpack .devbundle/libs.tar.xz"; return 1; }
# CUDA runtime and cuBLAS 13 (the toolkit, else PyTorch's wheels), NCCL 2 (likewise)
cuda_dirs=""
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  d=""
  for c in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$c/$lib" ] && { d=$c; break; }
  done
  [ -z "$d" ] && d=$(find /opt /usr/local /usr/lib/python3* -name "$lib" 2>/dev/null | head -1 | xargs -r dirname)
  echo "device_env: $lib -> ${d:-NOT FOUND}"
  [ -n "$d" ] && case ":$cuda_dirs:" in *":$d:"*) ;; *) cuda_dirs="$cuda_dirs:$d" ;; esac
done
export LD_LIBRARY_PATH="$AXDEV/lib$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$AXDEV/lib-fallback"
export OPAL_PREFIX=$AXDEV/usr PATH=$AXDEV/usr/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
echo "device_env: glibc $(ldd --version | head -1 | awk '{print $NF}'); missing libraries:"
ldd build/bin/axmem build/lib/libaxmem_cuda.so build/tests/cuda_ops_check | grep "not found" || echo "  none"
