#!/usr/bin/env bash
# Installs what the tests need beyond Rust, with Debian's packages: spirv-tools (spirv-val)
# and Mesa's lavapipe Vulkan CPU driver with the Vulkan loader. Idempotent: installs only
# what is missing; needs root or sudo.
set -euo pipefail
need=()
command -v spirv-val >/dev/null 2>&1 || need+=(spirv-tools)
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
{ ldconfig -p 2>/dev/null || true; } | grep -q 'libvulkan\.so\.1' || need+=(libvulkan1)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "installing: ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
