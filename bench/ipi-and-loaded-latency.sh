#!/usr/bin/env bash
# The IPI figures of `lowlat measure ipi` and the loaded-vs-idle latency curve of `lowlat
# measure memlat --load`, with their run-to-run spread. No packaged peer measures either
# (ipi-bench is a kernel module, Intel MLC is not packaged), so there is no ratio: the method
# is in `lowlat measure ipi --help` and `lowlat measure memlat --help`.
#
# RUNS runs of `measure ipi --cpus CPUS` (pairs) alternating with `--mesh --duration 1s`, then
# RUNS runs of `measure memlat --cpus CPUS --sizes SIZE --load 1`. Prints per pair the median
# round trip over the runs and its min..max, the mesh's IPIs/s, and per load intensity the
# median latency and delivered bandwidth.
#
# Usage: bench/ipi-and-loaded-latency.sh [RUNS=5] [CPUS=0-1] [SIZE=256M]
# Needs python3 and a release build (cargo build --release) or LOWLAT=path.
# Targets: no packaged peer measures either, so the IPI round trip's median is held to the
# bounds tests/it/live_known_answer.rs holds (0.3-50 µs). Exit: 0 met, 1 missed, 2 a run
# failed (bench/lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=${1:-5} CPUS=${2:-0-1} SIZE=${3:-256M}
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for i in $(seq 1 "$RUNS"); do
    bench_do 0 "$LOWLAT" measure ipi --cpus "$CPUS" --json > "$OUT/ipi$i.json" 2>/dev/null
    bench_do 0 "$LOWLAT" measure ipi --cpus "$CPUS" --mesh --duration 1s --json > "$OUT/mesh$i.json" 2>/dev/null
done
for i in $(seq 1 "$RUNS"); do
    bench_do 0 "$LOWLAT" measure memlat --cpus "$CPUS" --sizes "$SIZE" --load 1 --json > "$OUT/memlat$i.json" 2>/dev/null
done
python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
targets = open(f"{out}/targets", "w")
load = lambda name: [json.load(open(f"{out}/{name}{i}.json"))["result"] for i in range(1, runs + 1)]
def line(label, values, unit):
    print(f"{label:<34} median {statistics.median(values):10.1f} {unit}  (min..max {min(values):.1f}..{max(values):.1f})")
pairs = {}
for run in load("ipi"):
    for p in run["pairs"]:
        pairs.setdefault((p["from_cpu"], p["to_cpu"]), []).append((p["round_trip_ns"], p["baseline_ns"]["median"]))
for (a, b), values in sorted(pairs.items()):
    line(f"IPI round trip CPU {a} -> {b}", [v[0] for v in values], "ns")
    # No packaged peer: the bounds the known-answer test holds (0.3-50 us round trip).
    median = statistics.median(v[0] for v in values)
    print(f"below\tIPI round trip CPU {a} -> {b}, median (ns)\t{median:.0f}\t50000", file=targets)
    print(f"at-least\tIPI round trip CPU {a} -> {b}, median (ns)\t{median:.0f}\t300", file=targets)
    line(f"  the call alone on CPU {a}", [v[1] for v in values], "ns")
line("mesh: IPIs per second", [r["ipis_per_second"] for r in load("mesh")], "/s")
memlat = load("memlat")
line("idle latency (no load)", [r["curve"]["points"][0]["latency_ns"]["median"] for r in memlat], "ns")
for k, delay in enumerate(p["delay_ns"] for p in memlat[0]["loaded"]["points"]):
    points = [r["loaded"]["points"][k] for r in memlat if len(r["loaded"]["points"]) > k]
    line(f"load delay {delay} ns: latency", [p["chase"]["points"][0]["latency_ns"]["median"] for p in points], "ns")
    line(f"load delay {delay} ns: bandwidth", [p["load_mb_per_s"] for p in points], "MB/s")
targets.close()
PY
bench_targets "$OUT/targets"
bench_end
