#!/usr/bin/env bash
# The power curve of `lowlat compare` on recorded untouched runs: by runs per arm and planted
# change (every latency of the candidate's copies of real runs × factor), the share of
# interleaved splits in which the median endpoint is found changed the right way; factor 1 is
# the A/A column (splits whose verdict would set the exit code). examples/compare_power.rs
# does the work through the library, the way `lowlat compare` does.
#
# Target (issue 29): a 1.5× change on every CPU found with 4 runs per arm, both ways, on runs
# whose spread allows it (the timer runs of the default set do; its busy jitter runs do not,
# which the table shows), and no A/A split failing.
# Usage: bench/compare-power.sh [DIR [RUNS]]   (default: tests/data/compare/aa-busy-2vcpu 5)
# Exit: 0 when the targets hold, 1 when not, 2 when the example could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "$0")/lib.sh"

dir=${1:-tests/data/compare/aa-busy-2vcpu}
runs=${2:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bench_do 0 cargo run --quiet --profile profiling --example compare_power -- "$dir" "$runs" >"$out"
cat "$out"
# The targets: on the timer's table, the 4-runs row finds ×1.50 and ×0.67 in every split, and
# the ×1.00 column is 0 in every row of every table.
awk -F'|' '
  /^timer/ { table = "timer" } /^busy/ { table = "jitter" }
  $2 ~ /^ *[0-9]+ *$/ {
    if ($7 !~ /^ *0\//) { print "A/A split failing: " $0; bad = 1 }
    if (table == "timer" && $2 + 0 == 4) {
      split($4, lo, "/"); split($10, hi, "/")
      if (lo[1] + 0 != lo[2] + 0 || hi[1] + 0 != hi[2] + 0) { print "1.5x not always found with 4 runs: " $0; bad = 1 }
    }
  }
  END { exit bad }' "$out" || bench_missed=1
bench_end
