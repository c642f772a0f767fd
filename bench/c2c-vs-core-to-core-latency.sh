#!/usr/bin/env bash
# Runs `lowlat measure c2c` against nviennot's core-to-core-latency (its CAS benchmark, the
# same algorithm and defaults: 1000 round trips per sample, 300 samples, one-way latency =
# half a round trip), alternately, PAIRS times, on the same CPUs, and prints per CPU pair the
# median over runs of each tool's mean latency, the ratio lowlat / reference and the
# reference's own run-to-run spread.
#
# Installs nothing. Needs python3, core-to-core-latency (cargo install core-to-core-latency
# --root DIR, outside this repository; set C2C_REF=DIR/bin/core-to-core-latency) and a
# release build of lowlat (cargo build --release) or LOWLAT=path.
#
# Target: lowlat's median within 10 % of core-to-core-latency's (median ratio over the pairs).
# Exit: 0 target met, 1 missed, 2 a run of either tool failed (bench/lib.sh).
# Usage: C2C_REF=/path/to/core-to-core-latency bench/c2c-vs-core-to-core-latency.sh [CPUS] [PAIRS]
#        (defaults: 0,1 5; CPUS comma-separated)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CPUS=${1:-0,1}
PAIRS=${2:-5}
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}

command -v python3 >/dev/null || { echo "missing: python3" >&2; exit 2; }
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }
[ -x "${C2C_REF:-}" ] || { echo "set C2C_REF to a core-to-core-latency binary (cargo install core-to-core-latency --root DIR)" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

for i in $(seq 1 "$PAIRS"); do
    order="lowlat peer"; [ $((i % 2)) -eq 0 ] && order="peer lowlat"
    for who in $order; do
        if [ "$who" = lowlat ]; then
            bench_do 0 "$LOWLAT" measure c2c --cpus "$CPUS" --round-trips 1000 --samples 300 --json \
                > "$OUT/l$i.json" 2>/dev/null
        else
            bench_do 0 "$C2C_REF" 1000 300 --cores "$CPUS" --csv > "$OUT/p$i.csv" 2>/dev/null
        fi
    done
    echo "pair $i/$PAIRS done" >&2
done

python3 - "$OUT" "$PAIRS" "$CPUS" "$OUT/targets" <<'PY'
import json, statistics, sys
out, pairs, cpus = sys.argv[1], int(sys.argv[2]), [int(c) for c in sys.argv[3].split(",")]
targets = open(sys.argv[4], "w")
ours, theirs = {}, {}
for i in range(1, pairs + 1):
    for p in json.load(open(f"{out}/l{i}.json"))["result"]["run"]["pairs"]:
        key = tuple(sorted((p["from_cpu"], p["to_cpu"])))
        ours.setdefault(key, []).append(p["one_way_ns"]["mean"])
    # core-to-core-latency's CSV: row i holds the means for the cores listed before core i.
    for r, line in enumerate(open(f"{out}/p{i}.csv").read().splitlines()):
        for c, cell in enumerate(line.split(",")):
            if cell.strip() and r < len(cpus) and c < len(cpus):
                key = tuple(sorted((cpus[r], cpus[c])))
                theirs.setdefault(key, []).append(float(cell))
print(f"{'pair':<10}{'lowlat ns':>11}{'c2c-lat ns':>12}{'ratio':>8}  reference spread (min..max)")
ratios = []
for key in sorted(ours):
    if key not in theirs:
        continue
    mo, mt = statistics.median(ours[key]), statistics.median(theirs[key])
    ratios.append(mo / mt)
    print(f"{key[0]}-{key[1]:<8}{mo:>11.1f}{mt:>12.1f}{mo / mt:>8.3f}  "
          f"{min(theirs[key]):.1f}..{max(theirs[key]):.1f} "
          f"({(max(theirs[key]) - min(theirs[key])) / mt * 100:.1f} %)")
    print(f"{'':<10}lowlat runs: {', '.join(f'{x:.1f}' for x in ours[key])}")
    print(f"{'':<10}c2c-lat runs: {', '.join(f'{x:.1f}' for x in theirs[key])}")
if ratios:
    print(f"median ratio over {len(ratios)} pairs: {statistics.median(ratios):.3f}")
    # Target: within 10 % of core-to-core-latency.
    print(f"below\t|median ratio lowlat/c2c-lat - 1|\t{abs(statistics.median(ratios) - 1):.3f}\t0.10", file=targets)
PY
bench_targets "$OUT/targets"
bench_end
