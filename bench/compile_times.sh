#!/usr/bin/env bash
# Benchmark (not a test): compile time per kernel instance on every target, for the stdlib,
# every example and every port in bench/ports/ (issue 28's goal: under 2 s per instance for
# every target). For each file and target, `tilec build --report` gives each instance's
# code-generation time (CPU: Cranelift and LLVM after the shared front end and passes;
# SPIR-V: SIMT lowering and SPIR-V; PTX: SIMT lowering and LLVM's NVPTX backend); this prints
# the slowest instance per file and target, the front end's time for the file (CPU), and every
# instance over the bound.
#   TILEC=target/release/tilec bench/compile_times.sh [BOUND_MS]   (PTX needs the llvm feature)
set -euo pipefail
cd "$(dirname "$0")/.."
tilec="${TILEC:-target/release/tilec}"
bound="${1:-2000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
over=0
echo 'Slowest instance per file and target, ms (its symbol); the front end and passes once per file.'
echo
printf '| file | Cranelift | LLVM (CPU) | front end + passes | SPIR-V (32 lanes) | PTX (sm_80) |\n|---|---|---|---|---|---|\n'
for f in stdlib/linalg.tile examples/*.tile bench/ports/*.tile; do
    declare -A cell=()
    front=""
    for t in cranelift llvm spirv ptx; do
        case $t in
            cranelift | llvm) args=(--target cpu --backend "$t") ;;
            spirv) args=(--target spirv) ;;
            ptx) args=(--target ptx) ;;
        esac
        if ! "$tilec" build "$f" "${args[@]}" --report -o "$work/out" > "$work/$t.txt" 2> "$work/err.txt"; then
            cell[$t]="failed: $(head -1 "$work/err.txt")"
            continue
        fi
        # Each instance's time in ms, then its symbol.
        case $t in
            cranelift | llvm)
                sed -n 's/^\([A-Za-z0-9_]*\): \([0-9.]*\) ms (.*/\2 \1/p' "$work/$t.txt" > "$work/$t.ms"
                front="$(sed -n 's/^front end and passes: \([0-9.]*\) ms.*/\1/p' "$work/$t.txt")" ;;
            spirv) sed -n 's/^\([A-Za-z0-9_]*\): \([0-9.]*\) ms, .*/\2 \1/p' "$work/$t.txt" > "$work/$t.ms" ;;
            ptx) sed -n 's/.* kernel \([A-Za-z0-9_]*\) .*, \([0-9.]*\) ms to compile$/\2 \1/p' "$work/$t.txt" > "$work/$t.ms" ;;
        esac
        worst="$(sort -g -r "$work/$t.ms" | head -1)"
        cell[$t]="${worst%% *} (\`${worst#* }\`)"
        while read -r ms sym; do
            if awk -v a="$ms" -v b="$bound" 'BEGIN { exit !(a > b) }'; then
                echo "over ${bound} ms: $f $t $sym $ms ms" >> "$work/over.txt"
                over=$((over + 1))
            fi
        done < "$work/$t.ms"
    done
    echo "| \`$f\` | ${cell[cranelift]} | ${cell[llvm]} | $front | ${cell[spirv]} | ${cell[ptx]} |"
    unset cell
done
echo
if [ -s "$work/over.txt" ]; then cat "$work/over.txt"; fi
echo "instances over ${bound} ms: $over"
