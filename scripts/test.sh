#!/usr/bin/env bash
# README command 2: install dependencies, build with warnings as errors, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# The tests run as whoever runs this script. Under sudo, regime would run every test's workload
# as the caller (docs/safety.md); the tests that check that make their own user.
unset SUDO_UID SUDO_GID SUDO_USER
scripts/check-format.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)"
ctest --preset ci
