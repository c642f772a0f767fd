#!/usr/bin/env bash
# Times `lowlat compare` of 2 × 10 measure-jitter documents, each a 60 s run at a 1 µs
# threshold on 4 CPUs holding about 1,000,000 gaps per CPU as an HDR histogram (3 significant
# digits from 1 µs to 20 ms): 80 million samples in all, the shape of
# `lowlat measure jitter --duration 60s --threshold 1000 --json` output. Runs vary by ±1 %;
# the candidate arm's median is 2 % higher and its tail above 5 µs half as heavy. Appends
# the figures to bench/RESULTS.md, section "compare".
#
# Target: under 1 s. Exit status: 0 met, 1 missed, 2 a run exited with a status it must not
# have (compare: 0 no change or 1 a difference) (bench/lib.sh).
# Usage: bench/compare.sh [RUNS]   (default 10 timings; needs python3, uses hyperfine if present)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

runs=${1:-10}
results=bench/RESULTS.md
bin=${CARGO_TARGET_DIR:-target}/release/lowlat
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"

python3 - "$work" <<'EOF'
import json, math, sys
work = sys.argv[1]
GAPS, CPUS = 1_000_000, 4
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
                 "histogram": {"unit": "ns", "significant_digits": 3,
                               "buckets": histogram(median * wobble, tail_share * wobble)}}
                for cpu in range(CPUS)]},
        }
        with open(f"{work}/{arm}/run-{run:02}.json", "w") as f:
            json.dump(doc, f)
EOF

cmd=("$bin" compare "$work/a" -- "$work/b")
status=0
"${cmd[@]}" >"$work/out.txt" || status=$?
bench_exit_ok "0 1" "$status" "lowlat compare"
samples=$(python3 -c "
import json, glob
print(sum(c for f in glob.glob('$work/*/*.json') for cpu in json.load(open(f))['result']['cpus'] for _, c in cpu['histogram']['buckets']))")
buckets=$(python3 -c "
import json, glob
print(max(len(cpu['histogram']['buckets']) for f in glob.glob('$work/*/*.json') for cpu in json.load(open(f))['result']['cpus']))")
if command -v hyperfine >/dev/null; then
  hyperfine --style none --warmup 2 --runs "$runs" -N -i --export-json "$work/t.json" \
    -- "$(printf '%q ' "${cmd[@]}")" >/dev/null 2>&1
  bench_hyperfine_codes "0 1" "$work/t.json"
  mean_ms=$(python3 -c "import json; print(json.load(open('$work/t.json'))['results'][0]['mean']*1e3)")
  timing=$(python3 -c "
import json; r = json.load(open('$work/t.json'))['results'][0]
print(f\"{r['mean']*1e3:.0f} ± {r['stddev']*1e3:.0f} ms (min {r['min']*1e3:.0f}, max {r['max']*1e3:.0f}, {len(r['times'])} runs)\")")
else
  timing=$(python3 - "$runs" "${cmd[@]}" <<'EOF'
import statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(runs):
    t = time.perf_counter(); code = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode; times.append(time.perf_counter() - t)
    if code not in (0, 1):
        sys.exit(f"bench: a timed run exited {code} (allowed: 0 1); no timing of it is valid")
print(f"{statistics.mean(times)*1e3:.0f} ± {statistics.stdev(times)*1e3:.0f} ms (min {min(times)*1e3:.0f}, max {max(times)*1e3:.0f}, {runs} runs) {statistics.mean(times)*1e3}")
EOF
) || exit 2
  mean_ms=${timing##* }
  timing=${timing% *}
fi
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo
  echo "## compare ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "**Command:** \`bench/compare.sh $runs\` — \`lowlat compare A/ -- B/\`, release build, wall"
  echo "time of the whole process (reading 20 documents, the settings diff, 16 rows, 2000"
  echo "bootstrap resamples each). 2 × 10 runs × 4 CPUs, $samples samples in histograms of up to"
  echo "$buckets buckets. Load average at the end: $load."
  echo
  echo "| what | time | target |"
  echo "|---|---:|---|"
  echo "| compare 2 × 10 runs | $timing | under 1 s |"
  echo
  echo "Its table:"
  echo
  echo '```'
  cat "$work/out.txt"
  echo '```'
} | tee -a "$results"
bench_target "compare 2 x 10 runs (ms)" "$mean_ms" 1000
bench_end
