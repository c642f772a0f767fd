#!/usr/bin/env bash
# Times `lowlat fleet report` over a generated fleet (default 10,000 snapshots, one directory
# per host as the Ansible collection collects them) and records its peak memory; checks that it
# names exactly the planted outliers; appends the figures to bench/RESULTS.md, section "fleet".
#
# Targets: 10,000 snapshots in under 60 s and under 1 GB peak RSS on the 2-vCPU VM.
# No peer: no other tool audits and groups a fleet from offline snapshots.
# Usage: bench/fleet.sh [HOSTS]   (needs python3, zstd and GNU time: /usr/bin/time)
#        PROFILE=profiling bench/fleet.sh [HOSTS]   (the profiling build: minutes to build,
#        not the LTO release build's longer one; the figures then say so)
# Exit: 0 the targets met, 1 one missed, 2 a run failed (bench/lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

hosts=${1:-10000}
results=bench/RESULTS.md
target=${CARGO_TARGET_DIR:-target}
profile=${PROFILE:-release}
bin=$target/$profile/lowlat
for tool in python3 zstd /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench/fleet.sh: $tool is missing" >&2; exit 2; }
done
cargo build --profile "$profile" --quiet

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
generate="python3 tests/fixtures/fleet.py --lowlat $bin --hosts $hosts --out $work/fleet"
start=$(date +%s.%N)
# shellcheck disable=SC2086  # the command line, split into its words on purpose
bench_do 0 $generate
generated=$(echo "$(date +%s.%N) - $start" | bc)
size=$(du -sm "$work/fleet" | cut -f1)

load=$(cut -d' ' -f1-3 /proc/loadavg)
set +e
/usr/bin/time -f '%e %M %U %S' -o "$work/time" "$bin" fleet report "$work/fleet" --json >"$work/report.json"
rc=$?
set -e
bench_exit_ok "0 1" "$rc" "lowlat fleet report"
# GNU time puts "Command exited with non-zero status 1" (outliers found) before its figures.
read -r wall rss_kib user sys < <(tail -n 1 "$work/time")
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# Exactly the planted outliers, and every host reported.
check=$(python3 - "$work/report.json" "$work/fleet/planted.json" <<'PY'
import json, sys
report, planted = (json.load(open(f)) for f in sys.argv[1:3])
found = {o["host"] for g in report["groups"] for o in g["outliers"]}
ok = found == set(planted["outliers"]) and report["hosts"] == planted["hosts"]
print(f"{'yes' if ok else 'NO'}: {len(found)} outliers found, {len(planted['outliers'])} planted, "
      f"{report['hosts']} hosts reported, {report['distinct_states']} distinct host states")
PY
)

rss_mib=$((rss_kib / 1024))
verdict=$(python3 -c "print('met' if $wall < 60 and $rss_kib < 1024*1024 else 'NOT met')")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
{
  echo
  echo "## fleet ($(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "**Command:** \`PROFILE=$profile bench/fleet.sh $hosts\`: the fleet is written by \`$generate\` (${generated%.*} s,"
  echo "$size MiB, one directory per host, every 7th host with one planted variation), then"
  echo "\`/usr/bin/time lowlat fleet report DIR --json\` ($profile build) reads, audits and judges it."
  echo
  echo "**Machine:** $(nproc) vCPUs ($cpu), load average $load at the start, $load_end at the end."
  echo
  echo "| hosts | wall | user + sys CPU | peak RSS | exactly the planted outliers | target |"
  echo "|---:|---:|---:|---:|---|---|"
  echo "| $hosts | $wall s | $user + $sys s | $rss_mib MiB | $check | < 60 s, < 1 GB: $verdict |"
} >>"$results"
tail -12 "$results"
bench_target "fleet report of $hosts snapshots, wall (s)" "$wall" 60
bench_target "fleet report, peak RSS (KiB)" "$rss_kib" $((1024 * 1024))
case $check in yes:*) ;; *) echo "bench: TARGET MISSED: exactly the planted outliers: $check" >&2; bench_missed=1 ;; esac
bench_end
