#!/usr/bin/env bash
# The cost of `--explain` on the loop it explains (issue 30): with and without it, the loop
# period and the gap rate must not differ. An A/A comparison by the verdicts issue's method:
# RUNS runs without `--explain` (arm A) and RUNS with it (arm B), interleaved A, B, A, B, ...
# so that the machine's drift falls on both arms alike, each `measure ENGINE --cpus CPU
# --duration DURATION --json`; then `lowlat compare A -- B` (runs as the unit, Welch on the
# logs, Holm over the primary endpoints) judges them, and its verdict is printed after the
# loop period and the gap rate (jitter; the timer: its p99), which compare has no endpoint for,
# judged the same way: one value per run, B/A by Welch's t on the logs (scipy, when present).
#
# Target (issue 30): compare finds no difference between the arms (exit 0).
# Usage: bench/explain-overhead.sh [RUNS [DURATION [ENGINE [CPU]]]]
#        (defaults: 10 3s jitter 1; ENGINE is jitter or timer; needs root for --explain)
# The binary is $LOWLAT, else target/debug/lowlat (a dev build: the loop's period is the
# unoptimised one, the same in both arms).
# Exit: 0 compare found no difference; 1 it called one (the overhead is visible); 2 a run
# or the comparison failed.
set -euo pipefail
cd "$(dirname "$0")/.."
. "$(dirname "$0")/lib.sh"

runs=${1:-10}
duration=${2:-3s}
engine=${3:-jitter}
cpu=${4:-1}
lowlat=${LOWLAT:-target/debug/lowlat}
case $engine in jitter|timer) ;; *) echo "bench: ENGINE is jitter or timer, not $engine" >&2; exit 2 ;; esac
[ -x "$lowlat" ] || { echo "bench: no $lowlat; run cargo build (or set LOWLAT)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/A" "$dir/B"
for i in $(seq 1 "$runs"); do
  for arm in A B; do
    explain=()
    [ "$arm" = B ] && explain=(--explain)
    bench_do 0 "$lowlat" measure "$engine" --cpus "$cpu" --duration "$duration" "${explain[@]}" \
      --json >"$dir/$arm/run-$i.json" 2>/dev/null
  done
  echo "bench: round $i of $runs done" >&2
done
# Every B run must have been explained: an A/A of two untraced arms would prove nothing.
python3 - "$dir" "$engine" <<'EOF'
import glob, json, math, statistics, sys
d, engine = sys.argv[1], sys.argv[2]
arms = {}
for arm in "AB":
    docs = [json.load(open(f)) for f in sorted(glob.glob(f"{d}/{arm}/*.json"))]
    res = [doc["result"] for doc in docs]
    if arm == "B":
        untraced = [r for r in res if not r.get("explain", {}).get("traced")]
        if untraced:
            sys.exit(f"bench: {len(untraced)} run(s) with --explain were not traced: "
                     f"{untraced[0].get('explain', {}).get('notes')}")
    if engine == "jitter":
        # One value per run (runs are the unit), the mean over its CPUs.
        arms[arm] = {
            "loop period (ns)": [statistics.mean(c["loop_period_ns"] for c in r["cpus"]) for r in res],
            "gap rate (/s)": [statistics.mean(c["interruptions"] / (c["runtime_ns"] / 1e9)
                                              for c in r["cpus"]) for r in res],
        }
    else:
        arms[arm] = {"p99 (µs)": [statistics.mean(c["percentiles_ns"]["p99"] / 1000
                                                  for c in r["cpus"]) for r in res]}
# B/A of each figure by Welch's t on the logarithms of the runs' values, as compare does for
# its endpoints (docs/statistics.md): the ratio, its 95 % interval and p.
try:
    from scipy import stats
except ImportError:
    stats = None
for name in arms["A"]:
    a, b = arms["A"][name], arms["B"][name]
    line = (f"{name}: without --explain {statistics.mean(a):.2f} (sd {statistics.stdev(a):.2f}), "
            f"with {statistics.mean(b):.2f} (sd {statistics.stdev(b):.2f}), {len(a)} and {len(b)} runs")
    if stats and min(a + b) > 0:
        la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
        va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
        df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
        diff = statistics.mean(lb) - statistics.mean(la)
        half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
        p = stats.ttest_ind(lb, la, equal_var=False).pvalue
        line += (f"; B/A {math.exp(diff):.3f} [95% CI {math.exp(diff - half):.3f}, "
                 f"{math.exp(diff + half):.3f}], Welch p {p:.3f}")
    print(line)
EOF
status=0
"$lowlat" compare "$dir/A" -- "$dir/B" || status=$?
case $status in
  0) echo "bench: compare found no difference between the runs with and without --explain" ;;
  1) echo "bench: compare called a difference: --explain's overhead is visible" >&2; bench_missed=1 ;;
  *) bench_exit_ok "0 1" "$status" "lowlat compare" ;;
esac
bench_end
