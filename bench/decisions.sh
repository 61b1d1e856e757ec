#!/bin/sh
# The decision benchmark (docs/sweep.md, "Decision benchmark"): every policy on the two Zeus
# tables and the simulated corpus, then the cross-check of the adaptive search's settings, then
# the unbounded objectives against their own exhaustive choice where a cap binds (the corpus
# judged on its rows, then on its truth).
#   bench/decisions.sh [BUILD_DIR] [extra decision_bench options, e.g. --detail "Regime adaptive"]
# Build first: cmake --build build/ci --target decision_bench
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/ci}
[ $# -gt 0 ] && shift
bench="$build/decision_bench"
[ -x "$bench" ] || { echo "decisions.sh: $bench is not built (cmake --build $build --target decision_bench)" >&2; exit 1; }

# The committed corpus is what the generator writes.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bench" --write-corpus "$tmp" >/dev/null
for f in "$tmp"/*.csv; do
  cmp -s "$f" "$root/tests/data/synthetic/$(basename "$f")" ||
    { echo "decisions.sh: tests/data/synthetic/$(basename "$f") differs from the generator's" >&2; exit 1; }
done

"$bench" "$root/tests/data/zeus/V100.sweep.csv" "$root/tests/data/zeus/RTX6000.sweep.csv" --sim \
  --cross-check "$@"

for o in zeus:0.5 edp energy max-slowdown:10; do
  for judge in "" --judge-truth; do
    echo
    echo "## $o${judge:+ ($judge)}: where a cap binds, against the exhaustive choice"
    "$bench" "$root/tests/data/zeus/V100.sweep.csv" "$root/tests/data/zeus/RTX6000.sweep.csv" --sim \
      --sim-dense --objective "$o" $judge | awk '/^### /{t=$0} /^\| Regime adaptive \|/{n[t]++; if (n[t] == 3) print t ": " $0}'
  done
done
