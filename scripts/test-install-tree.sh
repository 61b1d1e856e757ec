#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed tree on its own: the binary finds
# its spec files beside itself (also after the tree is moved), REGIME_DATA_DIR still overrides,
# and the man page, completion, docs and Python helper are where they belong. No root needed.
#
#   bash scripts/test-install-tree.sh BUILD_DIR      (run by ctest as install_tree)
set -euo pipefail
build=$(cd "$1" && pwd)
fail() {
  printf 'test-install-tree: FAILED: %s\n' "$*" >&2
  exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/a" >/dev/null
unset REGIME_DATA_DIR
# The probe below keeps its run: in a state directory of its own, never the machine's.
export REGIME_STATE_DIR=$work/state REGIME_SYSTEM_STATE_DIR=$work/state
cd "$work"

for f in bin/regime share/regime/gpus/h200.json share/man/man1/regime.1 \
  share/bash-completion/completions/regime share/doc/regime/README.md bin/regimed \
  lib/systemd/system/regimed.service share/regime/regimed.policy.example; do
  [ -e "a/$f" ] || fail "cmake --install did not put $f in the prefix"
done
py=$(ls -d a/lib/python3*/dist-packages/regime_step)
[ -f "$py/__init__.py" ] || fail "no regime_step package under a/lib/python3*/dist-packages"

models() { "$@" devices | sed -n 's/^sim: models //p'; }
[[ $(models a/bin/regime) == *sim:h200* ]] || fail "the installed binary finds no spec files"
mv a b # a moved tree still finds its own
[[ $(models b/bin/regime) == *sim:h200* ]] || fail "a moved tree finds no spec files"
mkdir -p other/gpus && cp b/share/regime/gpus/t4.json other/gpus/
[ "$(REGIME_DATA_DIR=$work/other models b/bin/regime)" = "sim:t4" ] || fail "REGIME_DATA_DIR does not override"
out=$(b/bin/regime probe --device sim:t4 --workload sim:resnet50 --seconds 10)
[[ $out == *"regime: "* ]] || fail "a probe from the installed tree printed no regime"
PYTHONPATH=$(dirname "$(ls -d b/lib/python3*/dist-packages/regime_step)") \
  python3 -c 'import regime_step; assert regime_step.__file__.startswith("'"$work"'/b/")' ||
  fail "the installed regime_step does not import"
echo "installed tree: binary, spec files (also moved, and overridden), man page, completion, docs and Python helper in place"
