#!/usr/bin/env bash
# Runs `lowlat measure membw` against a packaged STREAM reference, alternately, PAIRS times,
# with the same array length and thread count, and prints per kernel the median of each
# tool, the ratio lowlat / reference and the reference's own run-to-run spread.
#
# Reference: likwid-bench `stream` kernels (Debian: apt-get install likwid). likwid-bench
# reports one rate over all its iterations (an average, not STREAM's best-of), for Triad only
# (its `stream` kernel is STREAM's Triad, counted the STREAM way: 24 bytes per element).
#
# Installs nothing. Needs python3 and a release build of lowlat (cargo build --release) or
# LOWLAT=path. LIKWID_KERNEL picks the likwid kernel (default stream; e.g. stream_avx).
#
# Usage: bench/membw-vs-stream.sh [PAIRS] [NTIMES]       (defaults: 5 10)
set -euo pipefail

PAIRS=${1:-5}
NTIMES=${2:-10}
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}
LIKWID_KERNEL=${LIKWID_KERNEL:-stream}

command -v python3 >/dev/null || { echo "missing: python3" >&2; exit 2; }
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# One lowlat run first, to learn the array length and threads lowlat chose by STREAM's rule.
"$LOWLAT" measure membw --ntimes "$NTIMES" --json > "$OUT/probe.json" 2>/dev/null || true
read -r ELEMENTS THREADS CPUS < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["result"]["system"]
print(d["array_elements"], len(d["cpus"]), ",".join(map(str, d["cpus"])))' "$OUT/probe.json")
echo "array: $ELEMENTS elements, threads: $THREADS on CPUs $CPUS, NTIMES $NTIMES" >&2

refs=()
if command -v likwid-bench >/dev/null; then
    refs+=(likwid)
    # likwid-bench sizes the three arrays together, in 1000-byte kB.
    LIKWID_KB=$(( ELEMENTS * 8 * 3 / 1000 ))
fi
[ ${#refs[@]} -gt 0 ] || { echo "no reference: apt-get install likwid" >&2; exit 2; }

run_ref() {
    case "$1" in
        likwid) likwid-bench -t "$LIKWID_KERNEL" -w "N:${LIKWID_KB}kB:${THREADS}" > "$2" 2>&1 ;;
    esac
}

for i in $(seq 1 "$PAIRS"); do
    order="lowlat ${refs[*]}"; [ $((i % 2)) -eq 0 ] && order="${refs[*]} lowlat"
    for who in $order; do
        if [ "$who" = lowlat ]; then
            "$LOWLAT" measure membw --ntimes "$NTIMES" --json > "$OUT/lowlat$i.json" 2>/dev/null
        else
            run_ref "$who" "$OUT/$who$i.txt"
        fi
    done
    echo "pair $i/$PAIRS done" >&2
done

python3 - "$OUT" "$PAIRS" "${refs[@]}" <<'PY'
import json, re, statistics, sys
out, pairs, refs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
def add(metric, who, value):
    rows.setdefault(metric, {}).setdefault(who, []).append(value)

for i in range(1, pairs + 1):
    d = json.load(open(f"{out}/lowlat{i}.json"))["result"]["system"]
    assert d["validation"]["validated"], f"lowlat run {i} did not validate"
    for k in d["kernels"]:
        name = k["kernel"].capitalize()
        add(f"{name} best MB/s", "lowlat", k["best_rate_mb_per_s"])
        add(f"{name} avg MB/s", "lowlat", k["bytes_per_iteration"] / k["avg_time_s"] / 1e6)
    for ref in refs:
        text = open(f"{out}/{ref}{i}.txt").read()
        m = re.search(r"^MByte/s:\s+([\d.]+)", text, re.M)
        add("Triad avg MB/s", "likwid", float(m.group(1)))

print(f"{'metric':<18}{'lowlat':>12}{'reference':>12}{'ref':>10}{'ratio':>8}  ref spread (min..max, range/median)")
for metric, by in rows.items():
    ours = by.get("lowlat")
    for ref in refs:
        theirs = by.get(ref)
        if not ours or not theirs:
            continue
        mo, mt = statistics.median(ours), statistics.median(theirs)
        spread = (max(theirs) - min(theirs)) / mt * 100
        print(f"{metric:<18}{mo:>12.1f}{mt:>12.1f}{ref:>10}{mo / mt:>8.3f}  "
              f"{min(theirs):.1f}..{max(theirs):.1f} ({spread:.1f} %)")
PY
