#!/usr/bin/env bash
# Runs `lowlat measure net` (client and echo in one process) against sockperf 3.7's ping-pong
# (`sockperf sr` as the echo, `sockperf pp` as the client, Debian's sockperf package) on the
# same CPUs, over loopback, with the same message size and duration, alternately, PAIRS times,
# and prints each tool's median one-way latency per run (sockperf's "percentile 50.000", half
# the round trip; lowlat's `one_way_estimate.p50_ns`, the same half), the median over runs and
# the ratio lowlat / sockperf.
#
# Installs nothing. Needs python3, taskset, sockperf (apt-get install sockperf) and a release
# build of lowlat (cargo build --release; the profiling build, cargo build --profile profiling,
# is close enough for a figure if said so) or LOWLAT=path.
#
# Target: lowlat's median one-way latency within 10 % of sockperf's and no slower: the ratio
# of the medians below 1.10.
# Exit: 0 target met, 1 missed, 2 a run of either tool failed (bench/lib.sh).
# Usage: bench/net-vs-sockperf.sh [CLIENT_CPU=0] [ECHO_CPU=1] [PAIRS=5] [SECONDS=5] [SIZE=64]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CLIENT=${1:-0} ECHO=${2:-1} PAIRS=${3:-5} SECONDS_=${4:-5} SIZE=${5:-64}
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}
PORT=${PORT:-11311}

for tool in python3 taskset sockperf; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }

OUT=$(mktemp -d)
SERVER=
# The sockperf server of an interrupted run goes too.
trap 'if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; fi; rm -rf "$OUT"' EXIT

for i in $(seq 1 "$PAIRS"); do
    order="lowlat peer"; [ $((i % 2)) -eq 0 ] && order="peer lowlat"
    for who in $order; do
        if [ "$who" = lowlat ]; then
            bench_do 0 "$LOWLAT" measure net --cpus "$CLIENT" --echo-cpu "$ECHO" --size "$SIZE" \
                --duration "${SECONDS_}s" --json > "$OUT/l$i.json" 2>/dev/null
        else
            taskset -c "$ECHO" sockperf sr -i 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
            SERVER=$!
            sleep 1
            bench_do 0 taskset -c "$CLIENT" sockperf pp -i 127.0.0.1 -p "$PORT" -m "$SIZE" \
                -t "$SECONDS_" > "$OUT/p$i.txt" 2>&1
            kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
            SERVER=
        fi
    done
    echo "pair $i/$PAIRS done" >&2
done

python3 - "$OUT" "$PAIRS" "$OUT/targets" <<'PY'
import json, re, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
ours, theirs = [], []
for i in range(1, pairs + 1):
    ours.append(json.load(open(f"{out}/l{i}.json"))["result"]["one_way_estimate"]["p50_ns"] / 1e3)
    text = open(f"{out}/p{i}.txt").read()
    median = re.search(r"percentile 50\.000 =\s*([0-9.]+)", text)
    if not median:
        sys.exit(f"sockperf run {i} printed no median:\n{text}")
    theirs.append(float(median.group(1)))
mo, mt = statistics.median(ours), statistics.median(theirs)
print(f"one-way latency, median of each run (µs):")
print(f"  lowlat   {', '.join(f'{x:.3f}' for x in ours)}")
print(f"  sockperf {', '.join(f'{x:.3f}' for x in theirs)}")
print(f"median over runs: lowlat {mo:.3f} µs, sockperf {mt:.3f} µs, ratio {mo / mt:.3f}")
print(f"sockperf's own spread: {min(theirs):.3f}..{max(theirs):.3f} µs "
      f"({(max(theirs) - min(theirs)) / mt * 100:.1f} %)")
with open(sys.argv[3], "w") as targets:
    print(f"below\tlowlat / sockperf, median one-way latency\t{mo / mt:.3f}\t1.10", file=targets)
PY
bench_targets "$OUT/targets"
bench_end
