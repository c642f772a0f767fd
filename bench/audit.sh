#!/usr/bin/env bash
# Times `lowlat audit` on the epyc7f32-2s fixture and on the 512-CPU synthetic machine, and in
# the same run `tuned-adm verify` (TuneD's closest counterpart) on this machine; appends the
# figures to bench/RESULTS.md, section "audit".
#
# Targets: audit of epyc7f32-2s well under 50 ms, of the 512-CPU machine under 500 ms; the
# ratio against tuned-adm verify is reported, not held (TuneD's verify cannot run here).
# Exit status: 0 targets met, 1 a target missed, 2 a run exited with a status it must not
# have (audit: 0 or 1) (bench/lib.sh).
# Usage: bench/audit.sh [RUNS]   (default 30 runs each; needs python3, uses hyperfine if present)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

runs=${1:-30}
load=$(cut -d' ' -f1-3 /proc/loadavg)
results=bench/RESULTS.md
fixture=tests/fixtures/machines/epyc7f32-2s
bin=target/release/lowlat

export DEBIAN_FRONTEND=noninteractive
install_if_missing() { # command package
  command -v "$1" >/dev/null && return 0
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq --no-install-recommends "$2" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends "$2" >/dev/null 2>&1; } || true
  fi
  command -v "$1" >/dev/null
}
have_hyperfine=yes; install_if_missing hyperfine hyperfine || have_hyperfine=no
have_tuned=yes; install_if_missing tuned-adm tuned || have_tuned=no

[ -d "$fixture" ] || { echo "bench/audit.sh: $fixture is missing (fixtures branch not merged?)" >&2; exit 2; }
cargo build --release --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tests/fixtures/generate.py --synthetic-512 "$work/synthetic-512" >/dev/null

# mean_ms NAME "ALLOWED" COMMAND...: times COMMAND, every run's exit status one of ALLOWED
# ("any" for a peer whose status does not matter; else the script exits 2); prints
# "mean ± sd (min..max)".
mean_ms() {
  local name=$1 allowed=$2; shift 2
  if [ "$have_hyperfine" = yes ]; then
    hyperfine --style none --warmup 3 --runs "$runs" -i -N --export-json "$work/$name.json" \
      -- "$(printf '%q ' "$@")" >/dev/null 2>&1
    bench_hyperfine_codes "$allowed" "$work/$name.json" >&2
    python3 - "$work/$name.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
open(sys.argv[1][:-len(".json")] + ".mean", "w").write(f"{r['mean']*1e3:.3f}")
print(f"{r['mean']*1e3:.2f} ± {r['stddev']*1e3:.2f} ms ({r['min']*1e3:.2f}..{r['max']*1e3:.2f})")
EOF
  else
    local times=()
    for _ in $(seq "$runs"); do
      local t0 t1 status=0; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || status=$?; t1=$(date +%s%N)
      bench_exit_ok "$allowed" "$status" "$*" >&2
      times+=($(( (t1 - t0) / 1000 )))
    done
    printf '%s\n' "${times[@]}" | python3 -c '
import statistics, sys
v = [int(x) / 1000 for x in sys.stdin]
open(sys.argv[1], "w").write(f"{statistics.mean(v):.3f}")
print(f"{statistics.mean(v):.2f} ± {statistics.pstdev(v):.2f} ms ({min(v):.2f}..{max(v):.2f})")' "$work/$name.mean"
  fi
}

# Once first, outside a command substitution, so that a crash stops the script here.
bench_run "0 1" "$bin" --root "$fixture" audit
bench_run "0 1" "$bin" --root "$work/synthetic-512" audit
bench_run "0" "$bin" --root "$work/synthetic-512" inventory
small=$(mean_ms small "0 1" "$bin" --root "$fixture" audit)
large=$(mean_ms large "0 1" "$bin" --root "$work/synthetic-512" audit)
large_json=$(mean_ms large_json "0 1" "$bin" --root "$work/synthetic-512" audit --json)
# The same machine read with a short rendering and no rules: how much of the audit's time is
# reading /proc and /sys.
large_read=$(mean_ms large_read "0" "$bin" --root "$work/synthetic-512" inventory)
# Exit 1 is the audit's failures; anything else makes no count valid.
bench_do "0 1" "$bin" --root "$fixture" audit --json >"$work/small.json"
bench_do "0 1" "$bin" --root "$work/synthetic-512" audit --json >"$work/large.json"
count() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["findings"]))' "$1"; }
findings_small=$(count "$work/small.json")
findings_large=$(count "$work/large.json")

if [ "$have_tuned" = yes ]; then
  tuned_out=$(timeout 60 tuned-adm verify 2>&1 | tr '\n' ' ' | sed 's/ *$//') || true
  tuned_time=$(mean_ms tuned any tuned-adm verify)
else
  tuned_out="tuned-adm not installed (not root, or apt-get failed)"
  tuned_time="n/a"
fi

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
[ -f "$results" ] || printf '# Benchmark results\n\nAppended by the scripts in bench/; newest last.\n' > "$results"
{
  echo
  echo "## audit ($(date -u +%Y-%m-%dT%H:%MZ), lowlat $(git rev-parse --short HEAD))"
  echo
  echo "Machine: ${cpu:-unknown CPU}, $(nproc) CPUs online, kernel $(uname -r), load average $load at the start (shared with other jobs)."
  echo "Method: $( [ "$have_hyperfine" = yes ] && echo "hyperfine $(hyperfine --version | cut -d' ' -f2), 3 warm-ups" || echo "date +%s%N loop"), $runs runs each, release build, wall time of the whole process (read + audit + render)."
  echo
  echo "| command | machine | findings | time (mean ± sd, min..max) | target |"
  echo "|---|---|---|---|---|"
  echo "| \`lowlat --root … audit\` | epyc7f32-2s fixture (16 CPUs) | $findings_small | $small | < 50 ms |"
  echo "| \`lowlat --root … audit\` | synthetic-512 (512 CPUs) | $findings_large | $large | < 500 ms |"
  echo "| \`lowlat --root … audit --json\` | synthetic-512 (512 CPUs) | $findings_large | $large_json | |"
  echo "| \`lowlat --root … inventory\` (same read, no rules) | synthetic-512 (512 CPUs) | n/a | $large_read | |"
  echo "| \`tuned-adm verify\` | this machine | n/a | $tuned_time | |"
  echo
  if [ -f "$work/tuned.mean" ]; then
    ratio=$(python3 -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.3f}")' \
      "$(cat "$work/small.mean")" "$(cat "$work/tuned.mean")")
    echo "Ratio, lowlat audit of epyc7f32-2s / tuned-adm verify (its refusal): $ratio."
    echo
  fi
  echo "tuned-adm verify said: \`$tuned_out\`. It only answers through the TuneD daemon over"
  echo "D-Bus; starting the daemon here would apply a TuneD profile to this shared machine, so it"
  echo "was not started and the time above is that of the refusal (Python start-up and the D-Bus"
  echo "attempt), a lower bound for a real verify."
} >> "$results"
tail -n 16 "$results"
bench_target "audit of epyc7f32-2s (ms)" "$(cat "$work/small.mean")" 50
bench_target "audit of synthetic-512 (ms)" "$(cat "$work/large.mean")" 500
bench_end
