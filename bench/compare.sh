#!/usr/bin/env bash
# Times `lowlat compare` of 2 × 10 measure-jitter documents, each a 60 s run at a 1 µs
# threshold on 15 CPUs holding about 1,000,000 gaps per CPU as an HDR histogram (3 significant
# digits from 1 µs to 20 ms) and the same gaps in 16 slices of the run's time: 300 million
# samples in all, the shape of `lowlat measure jitter --duration 60s --threshold 1000 --json`
# output on a 16-vCPU machine. Runs vary by ±1 %; the candidate arm's median is 2 % higher
# and its tail above 5 µs half as heavy. Also times `lowlat compare --calibrate` of the 10
# baseline runs. Every timed run's exit code is checked. Appends the figures to
# bench/RESULTS.md, section "compare".
#
# Targets (issue 29): compare under 1 s; --calibrate of 10 runs under 5 s. Exit status: 0
# met, 1 missed, 2 a run exited with a status it must not have (compare: 0 no change or 1 a
# difference) (bench/lib.sh).
# Usage: [PROFILE=profiling] bench/compare.sh [RUNS]   (default 10 timings; needs python3 and bc)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

runs=${1:-10}
results=bench/RESULTS.md
# PROFILE=profiling builds without LTO (minutes instead of half an hour on 2 cores); the
# figures of RESULTS.md say which build made them.
profile=${PROFILE:-release}
bin=${CARGO_TARGET_DIR:-target}/$profile/lowlat
cargo build --profile "$profile" --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"

python3 - "$work" <<'EOF'
import json, math, sys
work = sys.argv[1]
GAPS, CPUS, SLICES = 1_000_000, 15, 16
# HDR-like bucket edges at 3 significant digits, 1 µs .. 20 ms.
edges, v = [], 1000
while v < 20_000_000:
    edges.append(v)
    v += 10 ** max(0, int(math.log10(v)) - 2)
edges.append(v)
def histogram(median_ns, tail_share):
    # A log-normal body (sigma 0.3) and a Pareto tail (alpha 1.2 from 5 µs) holding tail_share
    # of the gaps: the mass of each bucket, as counts.
    def body(x):
        return 0.5 * (1 + math.erf((math.log(x) - math.log(median_ns)) / (0.3 * math.sqrt(2))))
    def tail(x):
        return 0.0 if x < 5000 else 1 - (x / 5000) ** -1.2
    buckets = []
    for lo, hi in zip(edges, edges[1:]):
        mass = (1 - tail_share) * (body(hi) - body(lo)) + tail_share * (tail(hi) - tail(lo))
        count = round(mass * GAPS)
        if count > 0:
            buckets.append([hi, count])
    return buckets
for arm, median, tail_share in (("a", 2000, 0.002), ("b", 2040, 0.001)):
    for run in range(10):
        wobble = 1 + 0.01 * (((run * 37) % 11) - 5) / 5  # ±1 % from run to run
        doc = {
            "schema_version": 2, "kind": "measure-jitter",
            "tool": {"name": "lowlat", "version": "0.1.0"},
            "created": "2026-11-25T15:00:00Z", "host": "bench",
            "command": ["lowlat", "measure", "jitter"],
            "environment": {"settings": {"cmdline:nohz_full": "" if arm == "a" else "1-3"}},
            "result": {"threshold_ns": 1000, "cpus": [
                {"cpu": cpu, "runtime_ns": 60_000_000_000,
                 "histogram": {"unit": "ns", "significant_digits": 3, "buckets": buckets},
                 "slices": [{"start_ns": i * 3_750_000_000, "duration_ns": 3_750_000_000,
                             "buckets": [[v, c // SLICES + (1 if i < c % SLICES else 0)]
                                         for v, c in buckets if c // SLICES + (1 if i < c % SLICES else 0)]}
                            for i in range(SLICES)]}
                for cpu in range(1, CPUS + 1)
                for buckets in [histogram(median * wobble, tail_share * wobble)]]},
        }
        with open(f"{work}/{arm}/run-{run:02}.json", "w") as f:
            json.dump(doc, f)
EOF

cmd=("$bin" compare "$work/a" -- "$work/b")
calibrate=("$bin" compare --calibrate "$work/a")
status=0
"${cmd[@]}" >"$work/out.txt" || status=$?
bench_exit_ok "0 1" "$status" "lowlat compare"
status=0
"${calibrate[@]}" >"$work/calibrate.txt" || status=$?
bench_exit_ok "0" "$status" "lowlat compare --calibrate"
samples=$(python3 -c "
import json, glob
print(sum(c for f in glob.glob('$work/*/*.json') for cpu in json.load(open(f))['result']['cpus'] for _, c in cpu['histogram']['buckets']))")
buckets=$(python3 -c "
import json, glob
print(max(len(cpu['histogram']['buckets']) for f in glob.glob('$work/*/*.json') for cpu in json.load(open(f))['result']['cpus']))")
# Times a command `runs` times (hyperfine when present), failing on any exit code above 1.
time_of() {
  python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(runs):
    t = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
    times.append(time.perf_counter() - t)
    if code > 1:
        sys.exit(f"bench: a timed run exited {code} (allowed: 0 1); no timing of it is valid")
print(f"{statistics.mean(times):.3f} {statistics.stdev(times):.3f} {min(times):.3f} {max(times):.3f}")
PY
}
read -r mean sd low high < <(time_of "${cmd[@]}") || exit 2
read -r cmean csd clow chigh < <(time_of "${calibrate[@]}") || exit 2
timing="$(printf '%.0f ± %.0f ms (min %.0f, max %.0f, %s runs)' "$(echo "$mean*1000" | bc)" "$(echo "$sd*1000" | bc)" "$(echo "$low*1000" | bc)" "$(echo "$high*1000" | bc)" "$runs")"
ctiming="$(printf '%.2f ± %.2f s (min %.2f, max %.2f, %s runs)' "$cmean" "$csd" "$clow" "$chigh" "$runs")"
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo
  echo "## compare ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "**Command:** \`bench/compare.sh $runs\` — \`lowlat compare A/ -- B/\` and \`lowlat compare"
  echo "--calibrate A/\`, $(basename "$(dirname "$bin")") build, wall time of the whole process (reading 20"
  echo "documents with their slices, the settings diff, 3 primary endpoints and 60 detail rows;"
  echo "the calibration: every split of 10 runs). 2 × 10 runs × 15 CPUs, $samples samples in"
  echo "histograms of up to $buckets buckets, each run also in 16 slices. Load average at the end: $load."
  echo
  echo "| what | time | target |"
  echo "|---|---:|---|"
  echo "| compare 2 × 10 runs | $timing | under 1 s |"
  echo "| compare --calibrate 10 runs | $ctiming | under 5 s |"
  echo
  echo "Its table:"
  echo
  echo '```'
  cat "$work/out.txt"
  echo '```'
} | tee -a "$results"

bench_target "compare 2 x 10 runs (s)" "$mean" 1
bench_target "compare --calibrate 10 runs (s)" "$cmean" 5
bench_end
