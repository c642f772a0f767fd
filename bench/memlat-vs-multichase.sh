#!/usr/bin/env bash
# Runs `lowlat measure memlat` against Google's multichase (the fully specified pointer chase
# of research/evaluation-tools.md §2.4), alternately, PAIRS times, on one CPU, with the same
# buffer, stride and randomisation: multichase -m SIZE -s 64 -T 4k (random 4 KiB windows,
# random lines within them), 5 samples of 0.5 s, the first dropped, best reported. lowlat
# takes the same: --sizes SIZE --stride 64 --window 4K --samples 4 --sample-ms 500 (one more
# sample is taken first and dropped). Prints the median of each tool's best, and lowlat's
# median-of-samples too, with the ratio lowlat / multichase.
#
# No pointer chase is packaged in Debian (lmbench, multichase and tinymembench are not), so
# MULTICHASE must name a multichase binary built from a checkout of google/multichase
# (`make multichase`, Apache-2.0). Installs nothing. Needs python3, taskset and a release
# build of lowlat (cargo build --release) or LOWLAT=path. On a machine with several NUMA
# nodes lowlat also measures its node matrix each run (not compared here).
#
# Usage: MULTICHASE=/path/to/multichase bench/memlat-vs-multichase.sh [CPU] [SIZE] [PAIRS]
#        (defaults: 1 1g 5)
set -euo pipefail

CPU=${1:-1}
SIZE=${2:-1g}
PAIRS=${3:-5}
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}

for tool in python3 taskset; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }
[ -x "${MULTICHASE:-}" ] || { echo "set MULTICHASE to a multichase binary (build google/multichase)" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

for i in $(seq 1 "$PAIRS"); do
    order="lowlat peer"; [ $((i % 2)) -eq 0 ] && order="peer lowlat"
    for who in $order; do
        if [ "$who" = lowlat ]; then
            "$LOWLAT" measure memlat --cpu "$CPU" --sizes "$SIZE" --stride 64 --window 4K \
                --samples 4 --sample-ms 500 --json > "$OUT/l$i.json" 2>/dev/null
        else
            taskset -c "$CPU" "$MULTICHASE" -m "$SIZE" -s 64 -T 4k -n 5 > "$OUT/p$i.txt" 2>&1
        fi
    done
    echo "pair $i/$PAIRS done" >&2
done

python3 - "$OUT" "$PAIRS" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
best, median, peer = [], [], []
for i in range(1, pairs + 1):
    point = json.load(open(f"{out}/l{i}.json"))["result"]["curve"]["points"][0]
    best.append(point["latency_ns"]["min"])
    median.append(point["latency_ns"]["median"])
    peer.append(float(open(f"{out}/p{i}.txt").read().split()[-1]))
mp = statistics.median(peer)
print(f"{'metric':<28}{'lowlat':>10}{'multichase':>12}{'ratio':>8}  multichase spread")
for name, ours in (("best ns/load", best), ("median-of-samples ns/load", median)):
    mo = statistics.median(ours)
    print(f"{name:<28}{mo:>10.2f}{mp:>12.2f}{mo / mp:>8.3f}  "
          f"{min(peer):.2f}..{max(peer):.2f} ({(max(peer) - min(peer)) / mp * 100:.1f} %)")
print(f"lowlat best per run: {', '.join(f'{x:.2f}' for x in best)}")
print(f"multichase per run:  {', '.join(f'{x:.2f}' for x in peer)}")
PY
