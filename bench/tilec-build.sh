# Sourced by the CPU benchmark scripts (bench/peers_cpu.sh, bench/ports_cpu.sh, bench/lu_cpu.sh,
# bench/factor_cpu.sh):
# `bench_tilec` sets `tilec` to $TILEC, or builds target/release/tilec with the LLVM CPU
# backend (LLVM 16: tools/install-deps.sh) and sets `tilec` to it, then prints the machine
# and build lines every result table starts with.
bench_tilec() {
    if [ -n "${TILEC:-}" ]; then
        tilec=$TILEC built="(given by TILEC)"
    else
        . tools/fix-dev-null.sh
        fix_dev_null
        export LLVM_SYS_160_PREFIX="${LLVM_SYS_160_PREFIX:-/usr/lib/llvm-16}"
        cargo build --release -j"${TILEC_JOBS:-2}" -p tilec --features ptx
        tilec=target/release/tilec
        built="(built from $(git describe --always --dirty 2>/dev/null || echo 'this tree'))"
    fi
    echo "date:   $(date -u +%Y-%m-%d)"
    echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
    echo "tilec:  $tilec $built"
    echo "load:   $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before)"
}

# `bench_venv`: sets `venv` to a virtual environment with NumPy and SciPy (PORTS_VENV, default
# ~/.cache/tilec-ports-venv), made on first use; with BENCH_STRONG_PEERS=1 also Intel MKL and
# PyTorch (the `mkl` and `torch` wheels, about 3 GB with torch's CUDA libraries), the peers of
# bench/strong_cpu.py.
bench_venv() {
    venv=${PORTS_VENV:-$HOME/.cache/tilec-ports-venv}
    if ! "$venv/bin/python" -c 'import numpy, scipy' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet numpy scipy
    fi
    if [ "${BENCH_STRONG_PEERS:-0}" = 1 ] && ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
        "$venv/bin/pip" install --quiet mkl torch
    fi
}

# `bench_numpy_script SCRIPT ARGS..`: the venv and tilec as above, the peers' versions, then
# `SCRIPT --tilec $tilec ARGS..` with the venv's Python (the NumPy/SciPy benchmarks).
bench_numpy_script() {
    local script=$1
    shift
    bench_venv
    bench_tilec
    "$venv/bin/python" -c 'import importlib.metadata as m
print("peers:  " + ", ".join(f"{p} {m.version(p)}" for p in ("numpy", "scipy", "torch", "mkl")
                             if any(d.metadata["Name"].lower() == p for d in m.distributions())))'
    "$venv/bin/python" "$script" --tilec "$tilec" "$@"
}
