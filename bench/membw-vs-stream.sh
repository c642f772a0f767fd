#!/usr/bin/env bash
# Runs `lowlat measure membw` against likwid-bench's Copy and Triad kernels, alternately, PAIRS
# times, with the same array length and thread count, and prints per kernel the median of each
# tool, the ratio lowlat / likwid and likwid's own run-to-run spread.
#
# Reference: likwid-bench (Debian: apt-get install likwid): `copy_<isa>` (c = a) and
# `stream_<isa>` (STREAM's Triad), or with STORES=streaming their non-temporal `copy_mem_<isa>`
# and `stream_mem_<isa>`, against `lowlat measure membw --stores streaming`. likwid-bench
# reports one rate over all its iterations (an average, not STREAM's best-of) and counts bytes
# the STREAM way (16 per Copy element, 24 per Triad element), so lowlat's averages are
# compared. ISA is the widest unit of this CPU (avx512, else avx; LIKWID_ISA overrides).
#
# Two timings of lowlat are compared, each against the same likwid figure:
#   "region": STREAM's, each kernel timed from dispatch to the completion barrier (lowlat's
#             reported figure, `times_s`);
#   "loop":   likwid-bench's, the slowest thread's own kernel loop, no dispatch or barrier
#             (`loop_times_s`); likwid-bench times each thread's loop over all its iterations
#             (about 1 s) between two barriers and takes the slowest thread.
# "loop" is the like-with-like comparison with likwid-bench.
#
# Pages: lowlat maps its arrays with transparent huge pages (MADV_HUGEPAGE; its JSON says how
# many bytes got them). likwid-bench allocates with posix_memalign, which under THP's madvise
# mode gets 4 KiB pages: reference "likwid" runs it so; reference "likwid-thp" runs it with
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc >= 2.35), which makes malloc advise huge pages,
# so that both tools stream through the same kind of page.
#
# Installs nothing. Needs python3 and a release build of lowlat (cargo build --release) or
# LOWLAT=path.
#
# Usage: [STORES=normal|streaming] bench/membw-vs-stream.sh [PAIRS] [NTIMES]  (defaults: 7 10)
# Target (issue 16): lowlat's loop rate ≥ 1.00 × likwid-bench for Copy and Triad (median of
# the pairs). Exit: 0 met, 1 missed, 2 a run of either tool failed (bench/lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PAIRS=${1:-7}
NTIMES=${2:-10}
LOWLAT=${LOWLAT:-$(dirname "$0")/../target/release/lowlat}
STORES=${STORES:-normal}
if [ -z "${LIKWID_ISA:-}" ]; then
    if grep -qw avx512f /proc/cpuinfo; then LIKWID_ISA=avx512; else LIKWID_ISA=avx; fi
fi
MEM=""; [ "$STORES" = streaming ] && MEM="mem_"

command -v python3 >/dev/null || { echo "missing: python3" >&2; exit 2; }
[ -x "$LOWLAT" ] || { echo "no lowlat binary at $LOWLAT: run cargo build --release or set LOWLAT" >&2; exit 2; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# One lowlat run first, to learn the array length and threads lowlat chose by STREAM's rule.
bench_do 0 "$LOWLAT" measure membw --ntimes "$NTIMES" --stores "$STORES" --json > "$OUT/probe.json" 2>/dev/null
read -r ELEMENTS THREADS CPUS < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["result"]["system"]
print(d["array_elements"], len(d["cpus"]), ",".join(map(str, d["cpus"])))' "$OUT/probe.json")
echo "array: $ELEMENTS elements, threads: $THREADS on CPUs $CPUS, NTIMES $NTIMES, stores $STORES, likwid copy_${MEM}$LIKWID_ISA and stream_${MEM}$LIKWID_ISA" >&2

command -v likwid-bench >/dev/null || { echo "no reference: apt-get install likwid" >&2; exit 2; }
refs=(likwid likwid-thp)
# likwid-bench sizes the arrays of a kernel together, in 1000-byte kB.
run_ref() {
    local tunables=""
    [ "$1" = likwid-thp ] && tunables=glibc.malloc.hugetlb=1
    GLIBC_TUNABLES=$tunables bench_do 0 likwid-bench -t "copy_${MEM}$LIKWID_ISA" \
        -w "N:$(( ELEMENTS * 8 * 2 / 1000 ))kB:${THREADS}" > "$2.copy" 2>&1
    GLIBC_TUNABLES=$tunables bench_do 0 likwid-bench -t "stream_${MEM}$LIKWID_ISA" \
        -w "N:$(( ELEMENTS * 8 * 3 / 1000 ))kB:${THREADS}" > "$2.triad" 2>&1
}

for i in $(seq 1 "$PAIRS"); do
    order="lowlat ${refs[*]}"; [ $((i % 2)) -eq 0 ] && order="${refs[*]} lowlat"
    for who in $order; do
        if [ "$who" = lowlat ]; then
            bench_do 0 "$LOWLAT" measure membw --ntimes "$NTIMES" --stores "$STORES" --json > "$OUT/lowlat$i.json" 2>/dev/null
        else
            run_ref "$who" "$OUT/$who$i.txt"
        fi
    done
    echo "pair $i/$PAIRS done" >&2
done

python3 - "$OUT" "$PAIRS" "${refs[@]}" <<'PY'
import json, re, statistics, sys
out, pairs, refs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
targets = open(f"{out}/targets", "w")
rows = {}
def add(kernel, who, value):
    rows.setdefault(kernel, {}).setdefault(who, []).append(value)

for i in range(1, pairs + 1):
    d = json.load(open(f"{out}/lowlat{i}.json"))["result"]["system"]
    assert d["validation"]["validated"], f"lowlat run {i} did not validate"
    for k in d["kernels"]:
        name = k["kernel"].capitalize()
        if name not in ("Copy", "Triad"):
            continue
        kept = lambda times: statistics.mean(times[1:])
        add(name, "lowlat region avg MB/s", k["bytes_per_iteration"] / kept(k["times_s"]) / 1e6)
        add(name, "lowlat loop avg MB/s", k["bytes_per_iteration"] / kept(k["loop_times_s"]) / 1e6)
    for ref in refs:
        for kernel in ("copy", "triad"):
            text = open(f"{out}/{ref}{i}.txt.{kernel}").read()
            m = re.search(r"^MByte/s:\s+([\d.]+)", text, re.M)
            assert m, f"no MByte/s in {ref}'s {kernel} output:\n{text}"
            add(kernel.capitalize(), ref, float(m.group(1)))
    huge = d.get("transparent_huge_bytes") or 0
    add("pages", "lowlat huge share", huge / (3 * d["array_bytes"]))

print("lowlat arrays in huge pages (median share): "
      f"{statistics.median(rows.pop('pages')['lowlat huge share']):.0%}")
print(f"{'kernel':<7}{'lowlat timing':<24}{'lowlat':>10}{'reference':>12}{'ref':>11}{'ratio':>7}  "
      "lowlat min..max | ref min..max (range/median)")
for kernel, by in rows.items():
    for ref in refs:
        theirs = by[ref]
        mt = statistics.median(theirs)
        spread = (max(theirs) - min(theirs)) / mt * 100
        for metric in ("lowlat region avg MB/s", "lowlat loop avg MB/s"):
            ours = by[metric]
            mo = statistics.median(ours)
            print(f"{kernel:<7}{metric[7:]:<24}{mo:>10.1f}{mt:>12.1f}{ref:>11}{mo / mt:>7.3f}  "
                  f"{min(ours):.1f}..{max(ours):.1f} | {min(theirs):.1f}..{max(theirs):.1f} "
                  f"({spread:.1f} %)")
        # Target (issue 16): lowlat's loop rate at least likwid-bench's, Copy and Triad.
        if ref == "likwid":
            ratio = statistics.median(by["lowlat loop avg MB/s"]) / mt
            print(f"at-least\t{kernel} ratio lowlat loop/likwid-bench\t{ratio:.3f}\t1.0", file=targets)
PY
bench_targets "$OUT/targets"
bench_end
