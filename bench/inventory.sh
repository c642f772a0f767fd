#!/usr/bin/env bash
# Times `lowlat inventory` on the epyc7f32-2s fixture and on a generated 512-CPU machine
# (4,000 IRQs, 5,000 tasks), and in the same run hwloc's lstopo reading the same trees
# (HWLOC_FSROOT), which is the closest peer: it reads the same sysfs topology (but not IRQs,
# tasks, power or DIMMs). Prints each mean and the ratio lowlat/lstopo.
#
# Needs: cargo, python3, hyperfine; lstopo-no-graphics (Debian hwloc) for the comparison.
# Targets: epyc7f32-2s well under 20 ms, synthetic-512 under 300 ms (mean). Exit: 0 met, 1
# missed, 2 a timed run failed (bench/lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/lowlat
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tests/fixtures/generate.py --synthetic-512 "$work/synthetic-512" >/dev/null
epyc=tests/fixtures/machines/epyc7f32-2s

runs=()
for tree in "$epyc" "$work/synthetic-512"; do
  runs+=("$bin inventory --root $tree")
  if command -v lstopo-no-graphics >/dev/null; then
    runs+=("HWLOC_FSROOT=$tree lstopo-no-graphics --of console")
  fi
done
# hyperfine fails when a run does: then no timing is valid (exit 2).
bench_run 0 hyperfine --warmup 3 --min-runs 20 --shell=bash --export-json "$work/times.json" "${runs[@]}"

python3 - "$work/times.json" "$work/targets" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
targets = open(sys.argv[2], "w")
by_cmd = {r["command"]: r for r in results}
print(f"{'command':<70} {'mean ms':>9} {'stddev':>8}")
for r in results:
    print(f"{r['command'][-70:]:<70} {r['mean']*1e3:9.2f} {r['stddev']*1e3:8.2f}")
pairs = [(c, c2) for c in by_cmd for c2 in by_cmd
         if "lowlat" in c and "lstopo" in c2 and c.split("--root ")[1] in c2]
for lowlat, lstopo in pairs:
    ratio = by_cmd[lowlat]["mean"] / by_cmd[lstopo]["mean"]
    print(f"ratio lowlat/lstopo on {lowlat.split('--root ')[1]}: {ratio:.2f}")
# Targets: the 16-CPU fixture well under 20 ms, the 512-CPU machine under 300 ms.
for command, r in by_cmd.items():
    if "lowlat" in command:
        limit = 300 if "synthetic-512" in command else 20
        print(f"below\tinventory {command.split('--root ')[1]}, mean (ms)\t{r['mean'] * 1e3:.1f}\t{limit}", file=targets)
PY
bench_targets "$work/targets"
bench_end
