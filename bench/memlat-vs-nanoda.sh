#!/usr/bin/env bash
# Runs `lowlat measure memlat` against nanoda's pointer chase, alternately, PAIRS times, on the
# same CPU and buffer size, and prints the median latency of each tool, the ratio lowlat /
# nanoda and nanoda's own run-to-run spread.
#
# Reference: nanoda 0.2.2 (crates.io: `cargo install --locked nanoda --version 0.2.2`), a Rust
# port of the chase of Chips and Cheese's MemoryLatencyTest: a single random cycle (Sattolo's
# shuffle) over every 8-byte slot of the buffer, so each load goes to a random cache line;
# its figure is the mean over all loads of one timed pass, with an `mfence` after each load
# (about 0.3 ns at L1 on this VM, measured with both tools at 16 KiB). lowlat runs the same
# kind of chase with `--window full` (one random cycle over every 64-byte line) and reports
# the median of its samples.
#
# Pages: lowlat maps the buffer with transparent huge pages (MADV_HUGEPAGE); nanoda allocates
# with malloc, which under THP's madvise mode gets 4 KiB pages, so nanoda runs with
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc >= 2.35: malloc advises huge pages), so that
# both chase through the same kind of page. Without it nanoda measures the page walks too.
#
# Installs nothing. Needs python3, nanoda on PATH (or NANODA=path), and a release build of
# lowlat (cargo build --release) or LOWLAT=path.
#
# Usage: [CPU=0] bench/memlat-vs-nanoda.sh [PAIRS] [SIZE_MIB]  (defaults: 7 1024)
# Target: lowlat's median within 5 % of nanoda's. Exit: 0 met, 1 missed, 2 a run of either
# tool failed (bench/lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
PAIRS=${1:-7}
SIZE_MIB=${2:-1024}
CPU=${CPU:-0}
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}
NANODA=${NANODA:-nanoda}

command -v python3 >/dev/null || { echo "missing: python3" >&2; exit 2; }
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }
command -v "$NANODA" >/dev/null || { echo "no reference: cargo install --locked nanoda --version 0.2.2" >&2; exit 2; }
command -v taskset >/dev/null || { echo "missing: taskset (util-linux)" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "buffer: $SIZE_MIB MiB on CPU $CPU, $PAIRS pairs, load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

for i in $(seq 1 "$PAIRS"); do
    order="lowlat nanoda"; [ $((i % 2)) -eq 0 ] && order="nanoda lowlat"
    for who in $order; do
        if [ "$who" = lowlat ]; then
            bench_do 0 "$LOWLAT" measure memlat --cpu "$CPU" --sizes "${SIZE_MIB}M" --window full --json \
                > "$OUT/lowlat$i.json" 2>/dev/null
        else
            GLIBC_TUNABLES=glibc.malloc.hugetlb=1 bench_do 0 taskset -c "$CPU" "$NANODA" -n "$SIZE_MIB" -i 1 -d \
                > "$OUT/nanoda$i.txt" 2>&1
        fi
    done
    echo "pair $i/$PAIRS done" >&2
done

python3 - "$OUT" "$PAIRS" <<'PY'
import json, re, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
ours, theirs, huge = [], [], []
for i in range(1, pairs + 1):
    curve = json.load(open(f"{out}/lowlat{i}.json"))["result"]["curve"]
    point = curve["points"][-1]
    ours.append(point["latency_ns"]["median"])
    huge.append((curve.get("transparent_huge_bytes") or 0) / point["size_bytes"])
    text = open(f"{out}/nanoda{i}.txt").read()
    # With one iteration nanoda prints only "min = X ns, max = X ns".
    m = re.search(r"avg = ([\d.]+) ns", text) or re.search(r"min = ([\d.]+) ns", text)
    assert m, f"no latency in nanoda's output:\n{text}"
    theirs.append(float(m.group(1)))
mo, mt = statistics.median(ours), statistics.median(theirs)
spread = lambda xs, m: (max(xs) - min(xs)) / m * 100
print(f"lowlat buffer in huge pages (median share): {statistics.median(huge):.0%}")
print(f"{'tool':<8}{'median ns':>10}  min..max (range/median)")
print(f"{'lowlat':<8}{mo:>10.1f}  {min(ours):.1f}..{max(ours):.1f} ({spread(ours, mo):.1f} %)")
print(f"{'nanoda':<8}{mt:>10.1f}  {min(theirs):.1f}..{max(theirs):.1f} ({spread(theirs, mt):.1f} %)")
print(f"ratio lowlat / nanoda: {mo / mt:.3f}")
# Target: within 5 % of nanoda.
with open(f"{out}/targets", "w") as targets:
    print(f"below\t|ratio lowlat/nanoda - 1|\t{abs(mo / mt - 1):.3f}\t0.05", file=targets)
PY
bench_targets "$OUT/targets"
bench_end
