#!/usr/bin/env bash
# Packs the release build for a GPU machine that cannot install packages: the regime binary and
# the benchmarks, plus every shared library they need except the C runtime (which the target has, newer). The result,
# .carry/ (git-ignored), is run there as .carry/bin/regime: its RUNPATH ($ORIGIN/../lib) finds the
# carried libraries without LD_LIBRARY_PATH, which would leak into the workloads it launches.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
rm -rf .carry && mkdir -p .carry/bin .carry/lib
cp "$build/regime" .carry/bin/
for b in "$build"/bench_* "$build"/*_bench; do [ -x "$b" ] && cp "$b" .carry/bin/ || true; done
# Debug info stays here: a test build's binary is 160 MB with it, over what may travel.
strip --strip-debug .carry/bin/*
for b in .carry/bin/*; do ldd "$b"; done | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|libstdc++.so.*) ;;  # the target's are newer
    *) cp -L "$lib" .carry/lib/ ;;
  esac
done
command -v patchelf >/dev/null || apt-get install -y -qq patchelf
# RUNPATH is not inherited by a library's own dependencies, so each carried library gets one too.
for b in .carry/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$b"; done
for l in .carry/lib/*; do [ -e "$l" ] && patchelf --set-rpath '$ORIGIN' "$l"; done
du -sh .carry
