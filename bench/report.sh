#!/usr/bin/env bash
# Times `lowlat report` on the issue's large case: a 512-CPU c2c document (the full matrix and
# all 130,816 pairs) and a 512-CPU jitter document, made by bench/report-docs.py from the small
# real documents in tests/fixtures/report/; prints the wall time and the size of the HTML, of
# which how much is the embedded documents; appends the figures to bench/RESULTS.md, section
# "report".
#
# Targets (issue 11): under 2 s and under 5 MB of HTML. Exit: 0 met, 1 missed, 2 a run failed
# (bench/lib.sh).
# Usage: bench/report.sh [RUNS] [CPUS]   (default 5 runs, 512 CPUs; needs python3 and GNU time)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

runs=${1:-5}
cpus=${2:-512}
results=bench/RESULTS.md
bin=${CARGO_TARGET_DIR:-target}/release/lowlat

cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench_do 0 python3 bench/report-docs.py --cpus "$cpus" --out "$work"
inputs=("$work/c2c-$cpus.json" "$work/jitter-$cpus.json")

# Wall time and CPU time (user + sys, from GNU time): on a shared machine the wall time also
# counts the time other processes held the CPUs.
times=() cpu_times=()
for _ in $(seq "$runs"); do
  t0=$(date +%s%N)
  bench_do 0 /usr/bin/time -f '%U %S' -o "$work/cpu" "$bin" report "${inputs[@]}" -o "$work/report.html"
  t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000000 )))
  cpu_times+=("$(awk '{printf "%d", ($1 + $2) * 1000}' "$work/cpu")")
done
stats() { printf '%s\n' "$@" | sort -n | awk '{t[NR]=$1} END {printf "median %d ms, min %d ms, max %d ms over %d runs", t[int((NR+1)/2)], t[1], t[NR], NR}'; }
summary=$(stats "${times[@]}")
cpu_summary=$(stats "${cpu_times[@]}")
load=$(cut -d' ' -f1-3 /proc/loadavg)
html_bytes=$(stat -c %s "$work/report.html")
docs_bytes=$(python3 - "$work/report.html" <<'PY'
import sys
html = open(sys.argv[1], encoding="utf-8").read()
marker = 'data-encoding="zlib+base64">'
start = html.index(marker) + len(marker)
print(len(html[start:html.index("</script>", start)].encode()))
PY
)
input_bytes=$(cat "${inputs[@]}" | wc -c)
mb() { python3 -c "print(f'{$1 / 1e6:.2f} MB')"; }

report=$(cat <<TXT

## report ($(date -u +%Y-%m-%dT%H:%MZ), lowlat $(git rev-parse --short HEAD), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))

\`bench/report.sh $runs $cpus\`: \`lowlat report\` of a $cpus-CPU c2c document and a $cpus-CPU jitter
document (release build, wall time of the whole command: reading, parsing, rendering, writing).

| figure | value | target |
|---|---|---|
| wall time | $summary (load average $load) | under 2 s |
| CPU time (user + sys) | $cpu_summary | |
| HTML | $(mb "$html_bytes") | under 5 MB |
| of which the embedded documents (zlib, base64) | $(mb "$docs_bytes") | |
| of which the page (charts, tables) | $(mb "$((html_bytes - docs_bytes))") | |
| input documents | $(mb "$input_bytes") | |
TXT
)
echo "$report"
echo "$report" >> "$results"
median_ms=$(printf '%s\n' "${times[@]}" | sort -n | awk '{t[NR]=$1} END {print t[int((NR+1)/2)]}')
bench_target "report of $cpus CPUs, median wall (ms)" "$median_ms" 2000
bench_target "report HTML (bytes)" "$html_bytes" 5000000
bench_end
