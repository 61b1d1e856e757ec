#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, clang, its own build folder build/fuzz) and runs
# each for SECONDS (default 15), starting from the seed corpus in tests/fuzz/corpus/NAME; new
# inputs go to build/fuzz/corpus/NAME, never into the repository. Prints each harness's
# executions; exits non-zero when one finds a crash, a sanitizer report, a leak, a timeout
# (-timeout, seconds per input) or an out-of-memory (-rss_limit_mb); the input is left in
# build/fuzz/findings/.
#   scripts/fuzz.sh 10            # every harness, 10 s each
#   scripts/fuzz.sh 60 fuzz_journal
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
shift || true
build=build/fuzz
command -v clang++ >/dev/null || { echo "fuzz.sh needs clang (apt-get install clang)" >&2; exit 2; }
cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "${FUZZ_JOBS:-$(nproc)}" >/dev/null
if [ $# -gt 0 ]; then targets=("$@"); else
  targets=(); for f in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
mkdir -p "$build/findings"
failed=0
total=0
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  log="$build/$t.log"
  set +e
  "$build/$t" "$build/corpus/$t" "tests/fuzz/corpus/$t" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$t-" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  total=$((total + ${runs:-0}))
  if [ $rc -ne 0 ]; then
    failed=1
    echo "$t: FAILED after ${runs:-0} executions (exit $rc); see $log and $build/findings/"
    grep -m 5 -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" || true
  else
    echo "$t: ${runs:-0} executions in ${seconds} s, no finding"
  fi
done
echo "fuzz: $total executions in all"
exit $failed
