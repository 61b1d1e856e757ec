#!/usr/bin/env bash
# Packs the release build for a GPU machine that cannot install packages: the regime binary plus
# every shared library it needs except the C runtime (which the target has, newer). The result,
# .carry/ (git-ignored), is run there as: LD_LIBRARY_PATH=.carry/lib .carry/bin/regime ...
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
rm -rf .carry && mkdir -p .carry/bin .carry/lib
cp "$build/regime" .carry/bin/
for b in "$build"/bench_* "$build"/*_bench; do [ -x "$b" ] && cp "$b" .carry/bin/ || true; done
ldd "$build/regime" | awk '/=> \//{print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*) ;;
    *) cp -L "$lib" .carry/lib/ ;;
  esac
done
du -sh .carry
