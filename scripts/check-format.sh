#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (style: .clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
find src tests bench \( -name '*.cpp' -o -name '*.hpp' \) -print0 | xargs -0 clang-format --dry-run --Werror
echo "clang-format: all files formatted"
