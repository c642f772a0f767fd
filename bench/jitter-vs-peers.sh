#!/usr/bin/env bash
# Runs `lowlat measure jitter` against oslat and `lowlat measure timer` against cyclictest
# (both from rt-tests), alternately on the same CPU, PAIRS times each, and prints per metric
# the median of each tool, their ratio and the peer's own run-to-run spread (min..max over
# its runs, and that range relative to its median).
#
# Installs nothing. Needs: cyclictest and oslat on PATH (Debian: apt-get install rt-tests),
# python3, GNU time (/usr/bin/time) for the memory figures, root (SCHED_FIFO, mlock), and a
# release build of lowlat (cargo build --release) or LOWLAT=path.
#
# Targets: lowlat's loop period below oslat's (ratio < 1.0); the timer's minimum within 1 µs of
# cyclictest's. Exit: 0 met, 1 missed, 2 a run of either tool failed (bench/lib.sh).
# Usage: bench/jitter-vs-peers.sh [CPU] [PAIRS] [SECONDS]     (defaults: 1 5 5)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CPU=${1:-1}
PAIRS=${2:-5}
SECS=${3:-5}
HK=${HK:-0}                       # housekeeping CPU for the peers' main threads
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}

for tool in cyclictest oslat python3 /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "missing: $tool (rt-tests gives cyclictest and oslat)" >&2; exit 2; }
done
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# shellcheck disable=SC2317  # called through bench_do
rss() { /usr/bin/time -f %M -o "$1" "${@:2}"; }

for i in $(seq 1 "$PAIRS"); do
    # Alternate which tool goes first.
    order="lowlat peer"; [ $((i % 2)) -eq 0 ] && order="peer lowlat"
    for who in $order; do
        if [ "$who" = lowlat ]; then
            bench_do 0 rss "$OUT/jl$i.rss" "$LOWLAT" measure jitter --cpus "$CPU" --threshold 1000 \
                --duration "${SECS}s" --json > "$OUT/jl$i.json" 2>/dev/null
        else
            bench_do 0 rss "$OUT/jp$i.rss" oslat -q -c "$CPU" -C "$HK" -D "$SECS" --json="$OUT/jp$i.json" >/dev/null 2>&1
        fi
    done
    for who in $order; do
        if [ "$who" = lowlat ]; then
            bench_do 0 rss "$OUT/tl$i.rss" "$LOWLAT" measure timer --cpus "$CPU" --interval 1000 \
                --duration "${SECS}s" --histogram 1000 --json > "$OUT/tl$i.json" 2>/dev/null
        else
            bench_do 0 rss "$OUT/tp$i.rss" cyclictest -q -m -p95 -i 1000 -D "$SECS" -a "$CPU" -t 1 -h 1000 \
                --mainaffinity="$HK" --json="$OUT/tp$i.json" >/dev/null 2>&1
        fi
    done
    echo "pair $i/$PAIRS done" >&2
done

python3 - "$OUT" "$PAIRS" "$OUT/targets" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
targets = open(sys.argv[3], "w")
load = lambda p: json.load(open(f"{out}/{p}.json"))
rss = lambda p: int(open(f"{out}/{p}.rss").read().split()[-1])

def hist_median(pairs_):
    """Median of (value, count) pairs, value = bucket lower edge."""
    total = sum(c for _, c in pairs_); acc = 0
    for v, c in sorted(pairs_):
        acc += c
        if acc * 2 >= total: return v
    return float("nan")

def bucket_quantile(items, q, total):
    """Lower edge of the bucket holding the q-quantile; None when it is in the overflow."""
    acc = 0
    for k, c in sorted(items):
        acc += c
        if acc >= q * total:
            return k
    return None

rows = {}
def add(metric, who, value): rows.setdefault(metric, {"lowlat": [], "peer": []})[who].append(value)

for i in range(1, pairs + 1):
    # jitter vs oslat: bucket i holds [i, i+1) us in both (oslat 2.4 labels it i+1).
    l = load(f"jl{i}")["result"]["cpus"][0]
    secs = l["runtime_ns"] / 1e9
    counts = l["oslat"]["counts"]
    add("loop period (ns)", "lowlat", l["runtime_ns"] / max(1, sum(counts)))
    add("gaps >= 1 us per s", "lowlat", sum(counts[1:]) / secs)
    add("median gap >= 1 us (us, bucket)", "lowlat", hist_median([(k, c) for k, c in enumerate(counts) if k >= 1]))
    add("max RSS (KiB)", "lowlat", rss(f"jl{i}"))
    p = load(f"jp{i}")["thread"]["0"]
    h = {int(k) - 1: v for k, v in p["histogram"].items()}
    ploops = sum(h.values())
    add("loop period (ns)", "peer", p["duration"] * 1e9 / ploops)
    add("gaps >= 1 us per s", "peer", sum(v for k, v in h.items() if k >= 1) / p["duration"])
    add("median gap >= 1 us (us, bucket)", "peer", hist_median([(k, v) for k, v in h.items() if k >= 1]))
    add("max RSS (KiB)", "peer", rss(f"jp{i}"))
    # timer vs cyclictest
    t = load(f"tl{i}")["result"]["cpus"][0]
    add("timer min (us)", "lowlat", t["min_ns"] // 1000)
    add("timer avg (us)", "lowlat", t["mean_ns"] / 1000)
    cb = t["cyclictest"]["buckets"]
    q = bucket_quantile(enumerate(cb), 0.99, sum(cb) + t["cyclictest"]["overflows"])
    add("timer p99 (us, bucket)", "lowlat", len(cb) if q is None else q)
    add("timer samples", "lowlat", t["samples"])
    add("timer max RSS (KiB)", "lowlat", rss(f"tl{i}"))
    c = load(f"tp{i}")["thread"]["0"]
    add("timer min (us)", "peer", c["min"])
    add("timer avg (us)", "peer", c["avg"])
    ch = {int(k): v for k, v in c["histogram"].items()}
    q = bucket_quantile(ch.items(), 0.99, c["cycles"])
    add("timer p99 (us, bucket)", "peer", 1000 if q is None else q)
    add("timer samples", "peer", c["cycles"])
    add("timer max RSS (KiB)", "peer", rss(f"tp{i}"))

print(f"{'metric':34} {'lowlat':>10} {'peer':>10} {'ratio':>7}   peer spread (min..max, range/median)")
for metric, v in rows.items():
    lm, pm = statistics.median(v["lowlat"]), statistics.median(v["peer"])
    spread = (max(v["peer"]) - min(v["peer"])) / pm * 100 if pm else float("nan")
    ratio = lm / pm if pm else float("nan")
    inside = "inside" if min(v["peer"]) <= lm <= max(v["peer"]) else "outside"
    print(f"{metric:34} {lm:10.3f} {pm:10.3f} {ratio:7.3f}   {min(v['peer']):.3f}..{max(v['peer']):.3f} ({spread:.1f} %), lowlat median {inside}")
print("peer: oslat for the first four rows, cyclictest for the timer rows")
median = lambda metric, who: statistics.median(rows[metric][who])
# Targets: a loop period no longer than oslat's (the detection floor); the timer's minimum
# within 1 us of cyclictest's (at most 1 us apart, as the target says).
print(f"below\tloop period ratio lowlat/oslat\t{median('loop period (ns)', 'lowlat') / median('loop period (ns)', 'peer'):.3f}\t1.0", file=targets)
print(f"at-most\t|timer min lowlat - cyclictest| (us)\t{abs(median('timer min (us)', 'lowlat') - median('timer min (us)', 'peer')):.1f}\t1", file=targets)
PY
bench_targets "$OUT/targets"
bench_end
