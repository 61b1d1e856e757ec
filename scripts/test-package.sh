#!/usr/bin/env bash
# Builds the Debian package, installs it with dpkg, checks that the installed tool works from the
# installed files alone, and removes it cleanly. Needs root (dpkg -i).
#
#   bash scripts/test-package.sh [BUILD_DIR]
#
# BUILD_DIR defaults to build/package (configured here: release build, no tests or benchmarks).
# An existing build folder (CI passes build/ci, already built by scripts/test.sh) is reused: only
# its install prefix is set to /usr, which recompiles nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build/package}
started=$(date +%s)
say() { printf 'test-package: %s\n' "$*"; }
fail() {
  printf 'test-package: FAILED: %s\n' "$*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "run as root: it installs the package with dpkg -i"
scripts/deps.sh
status=$(dpkg-query -W -f='${Status}' regime 2>/dev/null || true)
if [[ $status == *"install ok installed"* ]]; then
  fail "a regime package is installed already; this test installs and removes its own (dpkg -r regime first)"
fi
if grep -rqs 'path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
  fail "dpkg here skips man pages (path-exclude in /etc/dpkg/dpkg.cfg.d): 'man regime' cannot be checked"
fi

if [ -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DREGIME_WERROR=ON -DREGIME_BUILD_TESTS=OFF -DREGIME_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target regime regimed regime_man
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
rm -f "$build"/regime_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/regime_"$version"_*.deb)
say "built $deb ($(du -h "$deb" | cut -f1))"
dpkg-deb --field "$deb" Package Version Depends Recommends
dpkg-deb --field "$deb" Maintainer | grep -q '<.*@.*>' || fail "the package's Maintainer has no address"

# From here on the package is installed; take it away whatever happens.
trap 'dpkg -r regime >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb"
work=$(mktemp -d)
trap 'dpkg -r regime >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
# Nothing from the checkout may help: run from elsewhere, without the overrides a developer sets.
cd "$work"
unset REGIME_DATA_DIR REGIME_NVML_LIBRARY
export REGIME_STATE_DIR=$work/state

[ "$(command -v regime)" = /usr/bin/regime ] || fail "regime is not /usr/bin/regime: $(command -v regime)"
regime --version | tee "$work/version"
grep -qx "regime $version" "$work/version" || fail "--version does not say regime $version"

regime devices | tee "$work/devices"
grep -q 'sim: models .*sim:h200' "$work/devices" || fail "regime devices lists no simulated models: the spec files in /usr/share/regime/gpus were not found"

# The man page: present, readable by man, and in agreement with --help: every subcommand and
# every option that --help lists is in it.
page=$(man -w regime 2>&1) || true
grep -qx '/usr/share/man/man1/regime.1\(.gz\)\{0,1\}' <<<"$page" || fail "man -w regime: $page"
MANWIDTH=200 man regime 2>/dev/null | col -b >"$work/man.txt"
grep -q '^NAME' "$work/man.txt" || fail "man regime shows no page"
help_words() { "$@" --help | sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-zA-Z0-9-]*\).*/\2/p; /^Subcommands:/,/^[^ ]/ s/^  \([a-z][a-z0-9-]*\) .*/\1/p'; }
checked=0
for cmd in "" $(help_words regime | grep -v '^-'); do
  for word in $(help_words regime $cmd); do
    grep -qF -- "$word" "$work/man.txt" || fail "'regime $cmd --help' lists $word, man regime does not"
    checked=$((checked + 1))
  done
  [ -z "$cmd" ] || grep -qF "regime $cmd" "$work/man.txt" || fail "man regime has no section for regime $cmd"
done
say "man regime agrees with --help on $checked subcommand and option names"

# The node agent: its version, and its page (section 8) with every option of its --help.
[ "$(command -v regimed)" = /usr/bin/regimed ] || fail "regimed is not /usr/bin/regimed"
grep -qx "regimed $version" <<<"$(regimed --version)" || fail "regimed --version does not say regimed $version"
page=$(man -w regimed 2>&1) || true
grep -qx '/usr/share/man/man8/regimed.8\(.gz\)\{0,1\}' <<<"$page" || fail "man -w regimed: $page"
MANWIDTH=200 man regimed 2>/dev/null | col -b >"$work/regimed.man.txt"
grep -q '^EXIT STATUS' "$work/regimed.man.txt" || fail "man regimed shows no EXIT STATUS"
grep -qF '/var/lib/regime/agent-jobs.json' "$work/regimed.man.txt" || fail "man regimed names no agent-jobs.json"
agent_options=$(regimed --help | sed -n 's/^  \(-h, \)\{0,1\}\(--[a-z-]*\).*/\2/p')
[ "$(wc -l <<<"$agent_options")" -ge 8 ] || fail "regimed --help lists only: $agent_options"
for word in $agent_options; do
  grep -qF -- "$word" "$work/regimed.man.txt" || fail "'regimed --help' lists $word, man regimed does not"
done
say "man regimed agrees with --help on $(wc -l <<<"$agent_options") options"

# The main job on a simulated GPU, from the installed spec files.
regime study --device sim:h200 --workload sim:resnet50 | tee "$work/study"
grep -q '^3. decision: ' "$work/study" || fail "the study printed no decision"

# The Python helper is importable by the system's python3 as installed.
/usr/bin/python3 -c 'import regime_step, sys; print(regime_step.__file__); sys.exit(regime_step.__version__ != sys.argv[1])' "$version" |
  tee "$work/python"
grep -qx '/usr/lib/python3/dist-packages/regime_step/__init__.py' "$work/python" || fail "regime_step is not the installed one"

# Bash completion: subcommands, options, a nested subcommand, and a device.
complete_line() {
  bash -c 'source /usr/share/bash-completion/bash_completion
           source /usr/share/bash-completion/completions/regime
           COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
           _regime; printf "%s\n" "${COMPREPLY[@]}"' _ "$@"
}
# (Answers are captured first: with pipefail, grep -q closing the pipe early would fail it.)
expect_completion() {
  local want=$1 got
  shift
  got=$(complete_line "$@")
  grep -qx -- "$want" <<<"$got" || fail "completing '$*' gave '$got', not $want"
}
expect_completion study regime stu
expect_completion --device regime probe --dev
expect_completion show regime limit s
expect_completion sim:h200 regime probe --device sim:h
expect_completion --caps regime sweep --device sim:t4 --ca
say "bash completion answers"

[ -f /usr/share/doc/regime/README.md ] && [ -f /usr/share/doc/regime/safety.md ] || fail "docs not in /usr/share/doc/regime"
grep -q '^License: Apache-2.0' /usr/share/doc/regime/copyright || fail "no Apache-2.0 copyright file in /usr/share/doc/regime"
grep -q '^Files: third_party/prometheus-cpp/\*' /usr/share/doc/regime/copyright || fail "copyright does not credit the vendored prometheus-cpp"
zcat /usr/share/doc/regime/changelog.Debian.gz | head -1 | grep -q "^regime ($version)" || fail "changelog.Debian.gz does not start with regime ($version)"
man -P cat regime 2>/dev/null | grep -q 'EXIT STATUS' || fail "man regime has no EXIT STATUS"
say "copyright, changelog, maintainer address and exit statuses are in the package"
[ -x /usr/bin/regimed ] && /usr/bin/regimed --help | grep -q 'node agent' || fail "regimed is not /usr/bin/regimed"

# Every unit of deploy/systemd, installed, valid (systemd-analyze verify: its binary found, no
# unknown setting) and below 5 in systemd-analyze security.
for unit in regimed.service regime-restore.service regime-export.service; do
  path=/lib/systemd/system/$unit
  [ -f "$path" ] || path=/usr/lib/systemd/system/$unit
  [ -f "$path" ] || fail "no $unit unit in /lib/systemd/system"
  if command -v systemd-analyze >/dev/null; then
    said=$(systemd-analyze verify --man=no "$path" 2>&1) || fail "systemd-analyze verify $path: $said"
    [ -z "$said" ] || fail "systemd-analyze verify $path: $said"
    score=$(systemd-analyze security --offline=true --no-pager "$path" 2>&1 |
      sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
    [ -n "$score" ] || fail "systemd-analyze security gave no exposure level for $path"
    awk -v s="$score" 'BEGIN { exit !(s < 5) }' || fail "$unit scores $score in systemd-analyze security (5 or more)"
    say "$unit installed, exposure $score"
  fi
done
! ls /usr/share/regime/deploy/systemd/test_* >/dev/null 2>&1 || fail "the units' test is installed with the deploy examples"

# report.md's pictures are beside it, where its img/NAME.png links look.
pictures=$(grep -o '](img/[^)]*)' /usr/share/doc/regime/report.md | sed 's/^](\(.*\))$/\1/')
[ -n "$pictures" ] || fail "report.md links no img/ picture"
for picture in $pictures; do
  [ -s "/usr/share/doc/regime/$picture" ] || fail "report.md shows $picture, not in /usr/share/doc/regime"
done
say "report.md's $(wc -w <<<"$pictures") pictures are in /usr/share/doc/regime/img"

# The example site config: present, and accepted by the installed regime as its config file.
example=/usr/share/doc/regime/examples/regime.toml
[ -f "$example" ] || fail "no example config $example"
REGIME_BINARY=/usr/bin/regime REGIME_EXAMPLE_CONFIG=$example \
  python3 "$root/packaging/test_example_config.py" >"$work/example" 2>&1 ||
  { cat "$work/example"; fail "the installed regime does not accept $example"; }
say "regime accepts $example"

# The wheel for virtual environments: self-contained, so tagged manylinux (the glibc it needs).
ls /usr/share/regime/python/regime_step-*-py3-none-manylinux_*.whl >/dev/null 2>&1 ||
  fail "no manylinux regime_step wheel in /usr/share/regime/python: $(ls /usr/share/regime/python)"

# Removal leaves nothing of the package behind.
files=$(dpkg -L regime | grep -v '^/\.$')
dpkg -r regime
trap 'rm -rf "$work"' EXIT
! command -v regime >/dev/null || fail "regime is still on PATH after dpkg -r"
for f in $files; do
  if [ -f "$f" ] || [ -L "$f" ]; then fail "$f is left after dpkg -r"; fi
done
[ ! -e /usr/share/regime ] || fail "/usr/share/regime is left after dpkg -r"
status=$(dpkg-query -W -f='${Status}' regime 2>/dev/null || true)
[[ $status != *"install ok installed"* ]] || fail "dpkg still lists regime as installed"
say "installed, worked and removed cleanly in $(($(date +%s) - started)) s"
