#!/usr/bin/env bash
# Test of tools/dist.sh (run by tools/test.sh): packs the dev-profile binary, unpacks the
# archive elsewhere and checks, with an empty environment (no LLVM, no LD_LIBRARY_PATH), that
# - the binary links no LLVM library and every library it loads comes from the bundle;
# - `build --target ptx` writes PTX for every stdlib instance;
# - `run --target cpu` computes, and `run --target cuda` without a driver fails with E0430;
# - tools/gpu-check.sh finds the bundle's tilec, and without a driver says so and exits 0;
# - the archive fits the 64 MiB that travels to a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TILEC_DIST_PROFILE=dev tools/dist.sh "$tmp/dist" >"$tmp/dist.out"
cat "$tmp/dist.out"
archive=$(ls "$tmp"/dist/*.tar.xz)
mkdir "$tmp/box"
tar -C "$tmp/box" -xJf "$archive"
box=$(ls -d "$tmp"/box/tilec-*)
fail() { echo "test-dist: $*" >&2; exit 1; }
size=$(stat -c %s "$archive")
[ "$size" -lt $((64 << 20)) ] || fail "archive is $size bytes, over 64 MiB"
ldd "$box/lib/tilec" | grep -qi llvm && fail "the binary links LLVM dynamically: $(ldd "$box/lib/tilec")"
ls "$box/lib" | grep -qi llvm && fail "the bundle holds an LLVM library"
loader=$(ls "$box"/lib/ld-linux*)
# Every library the loader resolves comes from the bundle.
env -i "$loader" --library-path "$box/lib" --list "$box/lib/tilec" >"$tmp/libs" || fail "the bundled loader cannot load tilec"
if grep '=>' "$tmp/libs" | grep -v "=> $box/lib/" | grep -q .; then
    fail "libraries from outside the bundle: $(grep '=>' "$tmp/libs" | grep -v "=> $box/lib/")"
fi
cd "$tmp"
env -i PATH=/usr/bin:/bin "$box/tilec" build "$box/stdlib/linalg.tile" --target ptx --generic T=f32 -o "$tmp" >/dev/null ||
    fail "build --target ptx failed"
n=$(ls "$tmp"/*.ptx | wc -l)
[ "$n" -ge 10 ] || fail "expected a .ptx file per stdlib instance, got $n"
grep -l '\.entry' "$tmp"/*.ptx | wc -l | grep -qx "$n" || fail "a .ptx file has no entry point"
python3 -c 'import numpy as np; np.save("x.npy", np.arange(1, 7, dtype=np.float32).reshape(2, 3))'
env -i PATH=/usr/bin:/bin "$box/tilec" run "$box/stdlib/linalg.tile" --kernel row_sum --arg X=x.npy --out out=s.npy >run.txt ||
    fail "run --target cpu failed: $(cat run.txt)"
python3 -c 'import numpy as np; s = np.load("s.npy"); assert s.tolist() == [6.0, 15.0], s' ||
    fail "row_sum gave wrong sums"
set +e
env -i PATH=/usr/bin:/bin "$box/tilec" run "$box/stdlib/linalg.tile" --kernel row_sum --arg X=x.npy --out out=s2.npy --target cuda >cuda.txt 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q E0430 cuda.txt || fail "run --target cuda without a driver: exit $rc, $(cat cuda.txt)"
TILEC= "$box/tools/gpu-check.sh" >gc.txt 2>&1 || fail "tools/gpu-check.sh without a driver did not exit 0: $(cat gc.txt)"
grep -q "^tilec: $box/tilec " gc.txt || fail "tools/gpu-check.sh did not pick the bundle's tilec: $(head -5 gc.txt)"
grep -q "no NVIDIA driver on this machine, nothing checked" gc.txt || fail "tools/gpu-check.sh: $(cat gc.txt)"
echo "test-dist: ok ($(basename "$archive"): $size bytes)"
