#!/usr/bin/env bash
# Installs the Debian packages Regime builds with (DESIGN.md section 6). Idempotent: does nothing
# when every package is already there. Needs root (or sudo) the first time.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config git python3 clang-format
          libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev sqlite3
          libgtest-dev libgmock-dev libbenchmark-dev libceres-dev libeigen3-dev
          libre2-dev clang libclang-rt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
