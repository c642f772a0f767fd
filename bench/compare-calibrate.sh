#!/usr/bin/env bash
# Times `lowlat compare --calibrate` of 24 and 100 untouched runs and prints each one's wall
# time, CPU time and peak RSS (the child's ru_maxrss from wait4). Issue 44, R2-3: the
# calibration listed every split before drawing 2,000 of a size: 18 runs took 23 s and 1.6 GB,
# 20 runs 120 s and 10.9 GB, 24 runs (an ordinary `check --repeat 24`) were killed for memory.
# The runs are measure-jitter documents of one CPU, 10 s each, whose gaps spread by a few per
# cent from run to run. Appends the figures to bench/RESULTS.md, section "compare --calibrate".
#
# Targets: 24 runs under 2 s of CPU, 100 runs under 10 s, each under 100 MiB (the debug
# build met them: 0.6 s and 5.3 s, 26 MiB). Exit status: 0 met, 1 missed, 2 a run
# exited with a status it must not have (bench/lib.sh).
# Usage: [PROFILE=profiling|dev] bench/compare-calibrate.sh   (needs python3)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

results=bench/RESULTS.md
# PROFILE=profiling builds without LTO (minutes instead of half an hour on 2 cores); dev is
# the debug build. The figures of RESULTS.md say which build made them.
profile=${PROFILE:-release}
dir=$profile
[ "$profile" = dev ] && dir=debug
bin=${CARGO_TARGET_DIR:-target}/$dir/lowlat
cargo build --profile "$profile" --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" "$bin" <<'EOF' | tee "$work/table"
import json, os, subprocess, sys, time
work, binary = sys.argv[1], sys.argv[2]
targets = open(os.path.join(work, "targets"), "w")
print("| runs | wall s | CPU s | peak RSS MiB | splits judged |")
print("|---:|---:|---:|---:|---:|")
for runs, seconds in ((24, 2), (100, 10)):
    paths = []
    for run in range(runs):
        base = 1000 + (run * 37) % 50  # medians a few per cent apart
        buckets = [[base * i + run, 50] for i in range(1, 21)] + [[5_000_000, 1]]
        doc = {
            "schema_version": 2, "kind": "measure-jitter",
            "tool": {"name": "lowlat", "version": "0.1.0"},
            "created": "2026-12-05T20:00:00Z", "host": "bench",
            "command": ["lowlat", "measure", "jitter"],
            "environment": {"settings": {"cpufreq:boost": "1"}},
            "result": {"threshold_ns": 1000, "cpus": [
                {"cpu": 3, "runtime_ns": 10_000_000_000,
                 "histogram": {"unit": "ns", "significant_digits": 3, "buckets": buckets}}]},
        }
        path = os.path.join(work, f"r{runs}-{run:03}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        paths.append(path)
    out = os.path.join(work, f"calibrate-{runs}.json")
    with open(out, "wb") as stdout:
        t0 = time.monotonic()
        child = subprocess.Popen([binary, "compare", "--json", "--calibrate", *paths], stdout=stdout)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"bench: lowlat compare --calibrate of {runs} runs exited {code} (allowed: 0); no timing of it is valid")
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss / 1024
    splits = sum(s["splits"] for c in json.load(open(out))["calibrations"] for s in c["shares"])
    print(f"| {runs} | {wall:.2f} | {cpu:.2f} | {rss:.1f} | {splits} |")
    print(f"below\t--calibrate of {runs} runs, CPU (s)\t{cpu:.2f}\t{seconds}", file=targets)
    print(f"below\t--calibrate of {runs} runs, peak RSS (MiB)\t{rss:.1f}\t100", file=targets)
EOF

load=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo
  echo "## compare --calibrate: many runs ($(date -u +%Y-%m-%dT%H:%MZ), $dir build)"
  echo
  echo "**Command:** \`PROFILE=$profile bench/compare-calibrate.sh\` — \`lowlat compare --json --calibrate\`"
  echo "of 24 and 100 synthetic measure-jitter runs (one CPU, medians a few per cent apart): every"
  echo "size from 1 to half the runs per arm, each with its consecutive and interleaved splits and"
  echo "at most 2,000 of all splits, drawn without listing them (issue 44, R2-3). Wall and CPU time"
  echo "and peak RSS of the process (wait4). Load average at the end: $load."
  echo
  cat "$work/table"
} | tee -a "$results" >/dev/null

bench_targets "$work/targets"
bench_end
