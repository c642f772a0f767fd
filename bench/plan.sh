#!/usr/bin/env bash
# Times `lowlat plan --out DIR --force` (the partition, every setting and all artifacts
# written) on the 512-CPU synthetic machine and on the epyc7f32-2s fixture, and in the same run
# TuneD's own profile resolution (its Python loader expanding cpu-partitioning with this
# machine's variables, what `tuned-adm profile cpu-partitioning` does before applying); appends
# the figures to bench/RESULTS.md, section "plan".
#
# Target: the 512-CPU plan with all artifacts well under 500 ms.
# Usage: bench/plan.sh [RUNS]   (default 20 runs each; needs python3, uses hyperfine if present)
# Exit: 0 the target met, 1 missed, 2 a timed run failed (bench/lib.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

runs=${1:-20}
results=bench/RESULTS.md
fixture=tests/fixtures/machines/epyc7f32-2s
bin=target/release/lowlat

[ -d "$fixture" ] || { echo "bench/plan.sh: $fixture is missing" >&2; exit 2; }
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tests/fixtures/generate.py --synthetic-512 "$work/synthetic-512" >/dev/null

# mean_ms NAME COMMAND...: times COMMAND; prints "mean ± sd ms (min..max)".
mean_ms() {
  local name=$1; shift
  if command -v hyperfine >/dev/null; then
    # hyperfine fails when a run does: then no timing is valid (exit 2).
    bench_run 0 hyperfine --style none --warmup 3 --runs "$runs" -N --export-json "$work/$name.json" \
      -- "$(printf '%q ' "$@")"
    python3 - "$work/$name.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"{r['mean']*1e3:.1f} ± {r['stddev']*1e3:.1f} ms ({r['min']*1e3:.1f}..{r['max']*1e3:.1f})")
EOF
  else
    local times=()
    for _ in $(seq "$runs"); do
      local t0 t1; t0=$(date +%s%N); bench_run 0 "$@"; t1=$(date +%s%N)
      times+=($(( (t1 - t0) / 1000 )))
    done
    printf '%s\n' "${times[@]}" | python3 -c '
import statistics, sys
v = [int(x) / 1000 for x in sys.stdin]
print(f"{statistics.mean(v):.1f} ± {statistics.pstdev(v):.1f} ms ({min(v):.1f}..{max(v):.1f})")'
  fi
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
large=$(mean_ms large "$bin" --root "$work/synthetic-512" plan --out "$work/out-512" --force)
inventory=$(mean_ms inventory "$bin" --root "$work/synthetic-512" inventory)
small=$(mean_ms small "$bin" --root "$fixture" plan --out "$work/out-epyc" --force)
small_inventory=$(mean_ms small_inventory "$bin" --root "$fixture" inventory)
files_large=$(find "$work/out-512" -type f | wc -l)
bytes_large=$(du -sb "$work/out-512" | cut -f1)
nodes_large=$(find "$work/synthetic-512"/sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' | wc -l)
irqs_large=$(find "$work/synthetic-512"/proc/irq -maxdepth 1 -name '[0-9]*' | wc -l)
tasks_large=$(find "$work/synthetic-512"/proc -maxdepth 1 -name '[0-9]*' | wc -l)
settings_large=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["settings"]))' "$work/out-512/plan.json")

peer="not run (TuneD not installed)"
if /usr/bin/python3 -c 'import tuned' 2>/dev/null && [ -f /usr/lib/tuned/cpu-partitioning/tuned.conf ]; then
  cp -r /usr/lib/tuned "$work/tuned"
  echo "isolated_cores=\${f:calc_isolated_cores:1}" > "$work/vars.conf"
  sed -i "s#/etc/tuned/cpu-partitioning-variables.conf#$work/vars.conf#" "$work/tuned/cpu-partitioning/tuned.conf"
  cat > "$work/tuned-load.py" <<'EOF'
import sys
from tuned.profiles.locator import Locator
from tuned.profiles.loader import Loader
from tuned.profiles.factory import Factory
from tuned.profiles.merger import Merger
from tuned.profiles.variables import Variables
from tuned.utils.global_config import GlobalConfig
variables = Variables()
profile = Loader(Locator([sys.argv[1]]), Factory(), Merger(), GlobalConfig(), variables).load("cpu-partitioning")
for key, value in profile.units["bootloader"].options.items():
    variables.expand(str(value))
EOF
  if TMPDIR=$work /usr/bin/python3 "$work/tuned-load.py" "$work/tuned" >/dev/null 2>&1; then
    peer=$(TMPDIR=$work mean_ms tuned /usr/bin/python3 "$work/tuned-load.py" "$work/tuned")
  else
    peer="not run (TuneD's loader refused cpu-partitioning on this machine)"
  fi
fi

machine="$(nproc)-CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r), $(. /etc/os-release; echo "$PRETTY_NAME")"
{
  echo
  echo "## plan"
  echo
  echo "**Command:** \`bench/plan.sh $runs\` — lowlat release build, $runs runs after 3 warm-ups each"
  echo "(hyperfine when installed), output files written each run (\`--out DIR --force\`)."
  echo
  echo "**Machine:** $machine; $(date -u +%Y-%m-%d); load average $load_before at the start,"
  echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end (other jobs share the CPUs)."
  echo
  echo "| what | time |"
  echo "|---|---|"
  echo "| \`lowlat plan --out\` on synthetic-512 (512 CPUs, $nodes_large NUMA nodes, $irqs_large IRQs, $tasks_large tasks): $settings_large settings, $files_large files, $bytes_large bytes | $large |"
  echo "| \`lowlat inventory\` on synthetic-512 (reading the same machine, one screen of text) | $inventory |"
  echo "| \`lowlat plan --out\` on epyc7f32-2s | $small |"
  echo "| \`lowlat inventory\` on epyc7f32-2s | $small_inventory |"
  echo "| peer: TuneD 2.x Python loader resolving cpu-partitioning for this machine (no files written) | $peer |"
  echo
  echo "Target: the 512-CPU plan with all artifacts well under 500 ms. The plan's own work is the"
  echo "difference between a plan line and the inventory line of the same machine: reading the"
  echo "machine (about 40,000 small files on synthetic-512) is shared with every command. The peer"
  echo "line is context, not a like-for-like ratio: TuneD resolves one profile for the host it runs"
  echo "on and renders no artifact."
} >> "$results"
tail -n 16 "$results"
bench_target "plan --out on synthetic-512, mean (ms)" "${large%% *}" 500
bench_end
