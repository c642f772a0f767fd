#!/usr/bin/env bash
# The cost of `--explain`'s join. Target (issue 30): 60 s on 16 CPUs at 1,300 gaps per second
# joined in under 2 s and under 100 MB of its own. The ignored test
# measure::trace::explain::scale::joining_60_s_of_16_cpus_at_1300_gaps_per_second builds
# 1,248,000 synthetic gaps with three tick events each, joins them, and prints the time and
# the peak memory the join adds above its inputs (VmHWM). It runs alone, so that the peak is
# its own.
#
# Usage: bench/explain-join.sh [PROFILE]     (default: test, the dev profile; `profiling`
#                                             for release code, as bench/RESULTS.md prefers)
# Exit status: 0 both targets met, 1 one missed, 2 the join failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
profile=${1:-test}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bench_do 0 cargo test --profile "$profile" --lib joining_60_s_of_16_cpus -- --ignored --nocapture >"$out" 2>&1
grep -E 'explain join|test result' "$out"
line=$(grep 'explain join' "$out")
seconds=$(sed -E 's/.*: ([0-9.]+) s;.*/\1/' <<<"$line")
join_mb=$(sed -E "s/.*the join's own peak ([0-9]+) MB.*/\1/" <<<"$line")
bench_target "join seconds" "$seconds" 2
bench_target "join's own peak MB" "$join_mb" 100
bench_end
