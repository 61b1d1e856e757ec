#!/usr/bin/env bash
# Installs the Debian packages Regime builds with (docs/install.md), then the npm packages of
# report/package-lock.json (ECharts, inlined into report pages; playwright-core, which drives
# Chromium in the report's browser test) and copies ECharts to data/report/. Idempotent: does
# nothing when everything is already there. Needs root (or sudo) the first time.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config git python3 clang-format
          libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev sqlite3
          libgtest-dev libgmock-dev libbenchmark-dev libceres-dev libeigen3-dev
          python3-setuptools python3-wheel python3-venv python3-pip
          help2man man-db bash-completion dpkg-dev file chromium systemd
          libre2-dev clang libclang-rt-dev libcpp-httplib-dev libssl-dev openssl prometheus
          slurmctld slurmd slurm-client slurmdbd munge mariadb-server libslurm-dev
          libmariadb-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm (with Node.js) from Debian only where no Node.js is installed at all.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
stamp="$root/report/node_modules/.regime-lock"
if ! cmp -s "$root/report/package-lock.json" "$stamp" 2>/dev/null; then
  echo "installing report/package-lock.json (npm ci)"
  (cd "$root/report" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
  cp "$root/report/package-lock.json" "$stamp"
fi
library="$root/report/node_modules/echarts/dist/echarts.min.js"
if ! cmp -s "$library" "$root/data/report/echarts.min.js" 2>/dev/null; then
  mkdir -p "$root/data/report"
  cp "$library" "$root/data/report/echarts.min.js"
fi
