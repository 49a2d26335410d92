#!/usr/bin/env bash
# Builds a self-contained tilec for x86-64 Linux with the PTX backend, for machines that have
# neither Rust nor LLVM (a GPU box): LLVM 16 is linked statically, and every shared library
# the binary needs (the C library and its loader included, so a newer glibc here does not
# matter there) is packed beside it in lib/, with libvulkan.so.1 for `run --target vulkan`.
# The NVIDIA driver (libcuda.so.1) is the machine's own, loaded at run time: the wrapper keeps
# the caller's LD_LIBRARY_PATH (after the bundle's lib/) and adds the driver's usual folders, so
# that the packed loader finds it where the machine's own loader would.
#
#   tools/dist.sh [OUT_DIR]       # default target/dist
#
# writes OUT_DIR/tilec-VERSION-x86_64-linux/ (run it as `tilec-.../tilec ...`) and
# OUT_DIR/tilec-VERSION-x86_64-linux.tar.xz, and prints the archive's size. xz packs it in
# about 28 MiB where gzip needs 41 (the binary and the Python module each hold LLVM), which
# leaves room in the 64 MiB that travels to a GPU machine; where that machine has no xz, it
# unpacks with `python3 -m tarfile -e ARCHIVE DIR` (Python's lzma module). The bundle also holds stdlib/,
# examples/, the GPU check (tools/gpu-check.sh, tools/gpu_check.py, tools/gpu_torch_check.py),
# bench/peers/, and python/: the Python package with the PTX backend (the extension module of
# `maturin build --features ptx`, its wheel unpacked), importable with PYTHONPATH=BUNDLE/python.
# TILEC_DIST_PROFILE=dev packs the dev-profile binaries (quicker to build; tools/test-dist.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/fix-dev-null.sh
fix_dev_null
./tools/install-deps.sh >&2
export LLVM_SYS_160_PREFIX="${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}"
profile=${TILEC_DIST_PROFILE:-release}
case "$profile" in
    release) dir=release ;;
    dev) dir=debug ;;
    *) echo "TILEC_DIST_PROFILE must be release or dev" >&2; exit 2 ;;
esac
fix_dev_null
cargo build --profile "$profile" -p tilec --features ptx -j"${TILEC_JOBS:-2}" >&2
bin=target/$dir/tilec
out=${1:-target/dist}
version=$(git describe --always --dirty 2>/dev/null || echo unknown)
name=tilec-$version-x86_64-linux
stage=$out/$name
rm -rf "$stage" "$out/$name.tar.xz"
mkdir -p "$stage/lib" "$stage/tools" "$stage/bench" "$stage/python"
cp "$bin" "$stage/lib/tilec"
strip --strip-all "$stage/lib/tilec"
# The libraries the binary links, and the rest of the C library (libcuda.so.1 on the GPU box
# links libpthread, libdl and librt: they must come from the same glibc as libc.so.6).
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}')
libc_dir=$(dirname "$(ldd "$bin" | awk '$1 == "libc.so.6" {print $3}')")
for extra in libpthread.so.0 libdl.so.2 librt.so.1 libm.so.6; do
    [ -e "$libc_dir/$extra" ] && libs="$libs $libc_dir/$extra"
done
vk=$({ ldconfig -p 2>/dev/null || true; } | awk '$1 == "libvulkan.so.1" {print $NF; exit}')
[ -n "$vk" ] && libs="$libs $vk"
for l in $libs; do
    cp -L "$l" "$stage/lib/"
done
loader=$(basename "$(ldd "$bin" | awk '$1 ~ /ld-linux/ {print $1}')")
# The packed loader's --library-path replaces LD_LIBRARY_PATH for everything it loads, dlopen
# included: keep the caller's after the bundle's own folder, then the NVIDIA driver's usual
# folders (container runtimes mount it under /usr/local/nvidia and reach it through
# LD_LIBRARY_PATH), so that libcuda.so.1 and libnvidia-ptxjitcompiler.so.1 load from there.
cat > "$stage/tilec" <<SH
#!/bin/sh
# tilec, self-contained: lib/tilec run by the C library and loader packed beside it, with the
# caller's LD_LIBRARY_PATH and the NVIDIA driver's usual folders after the bundle's lib/.
here=\$(dirname "\$(readlink -f "\$0")")
path="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
path="\$path:/usr/local/nvidia/lib64:/usr/local/nvidia/lib:/run/nvidia/driver/usr/lib/x86_64-linux-gnu"
path="\$path:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:/usr/lib64:/usr/lib/wsl/lib"
exec "\$here/lib/$loader" --library-path "\$path" "\$here/lib/tilec" "\$@"
SH
chmod +x "$stage/tilec"
cp -r stdlib examples "$stage/"
cp tools/gpu-check.sh tools/gpu_check.py tools/gpu_torch_check.py "$stage/tools/"
cp -r bench/peers "$stage/bench/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
# The Python package, for the GPU check's CUDA-tensor part: the wheel of tools/wheel.sh (an
# abi3 wheel for CPython 3.9+ with LLVM inside), unpacked (a wheel is a zip of the installed
# files) and kept beside the archive for `pip install`.
wheels=$(mktemp -d)
TILEC_WHEEL_PROFILE=$profile tools/wheel.sh "$wheels" >&2
"${PYTHON:-python3}" -m zipfile -e "$wheels"/tilec-*.whl "$stage/python"
rm -f "$out"/tilec-*.whl
cp "$wheels"/tilec-*.whl "$out/"
rm -rf "$wheels"
tar -C "$out" -cf - "$name" | xz -T"${TILEC_JOBS:-2}" -6 >"$out/$name.tar.xz"
size=$(stat -c %s "$out/$name.tar.xz")
echo "$out/$name.tar.xz: $size bytes ($((size / 1048576)) MiB; unpacked $(du -sm "$stage" | cut -f1) MiB)"
