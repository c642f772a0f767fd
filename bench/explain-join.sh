#!/usr/bin/env bash
# The cost of `--explain`'s join (issue 30's target: 60 s on 16 CPUs at 1,300 gaps per second
# joined in under 2 s and under 100 MB): the ignored test
# measure::trace::explain::scale::joining_60_s_of_16_cpus_at_1300_gaps_per_second builds
# 1,248,000 synthetic gaps with three tick events each, joins them, and prints the time and
# the peak memory the join adds above its inputs (VmHWM). It runs alone, so that the peak is
# its own.
#
# Usage: bench/explain-join.sh [PROFILE]     (default: test, the dev profile; `profiling`
#                                             for release code, as bench/RESULTS.md prefers)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-test}
cargo test --profile "$profile" --lib joining_60_s_of_16_cpus -- --ignored --nocapture 2>&1 |
    grep -E 'explain join|test result'
