#!/usr/bin/env bash
# Builds every fuzz target and runs each for SECONDS (default 60), starting from the committed
# seeds (fuzz/seeds/<target>/, copied to a scratch corpus so they stay as committed). Fails if
# any target crashes, leaks, times out or cannot run; prints per target the executions done.
#
#   fuzz/run.sh [SECONDS]
#
# Environment: FUZZ_JOBS, how many targets run at once (default: the number of cores, since
# each target uses one); FUZZ_ARTIFACTS, where crashing inputs are kept (default
# fuzz/artifacts/<target>/, git-ignored).
#
# Installs cargo-fuzz from crates.io if it is missing. Builds with the nightly toolchain if
# rustup has one, otherwise with the default toolchain and RUSTC_BOOTSTRAP=1 (the sanitizer
# and coverage flags cargo-fuzz passes are nightly-only).
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz/run.sh: SECONDS must be a whole number of seconds above 0, not '$seconds'" >&2
  exit 2
fi
jobs="${FUZZ_JOBS:-$(nproc)}"
artifacts="${FUZZ_ARTIFACTS:-$PWD/artifacts}"
# A unit slower than this is a hang (a blocking read, a runaway loop), reported as a failure.
unit_timeout_s=25

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz from crates.io"
  cargo install cargo-fuzz --locked --quiet
fi
if rustup run nightly rustc --version >/dev/null 2>&1; then
  cargo=(cargo +nightly)
else
  echo "fuzz: no nightly toolchain; building with $(rustc --version) and RUSTC_BOOTSTRAP=1"
  export RUSTC_BOOTSTRAP=1
  cargo=(cargo)
fi

# No target (cargo fuzz list failed, or fuzz/Cargo.toml lost its [[bin]]s) is a failure, not a
# run that passes having fuzzed nothing (tests/it/fuzz.rs runs this part with a stand-in cargo).
if ! list="$("${cargo[@]}" fuzz list)"; then
  echo "fuzz/run.sh: 'cargo fuzz list' failed; nothing would be fuzzed" >&2
  exit 1
fi
mapfile -t targets < <(grep -v '^$' <<<"$list" || true)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz/run.sh: 'cargo fuzz list' named no target; nothing would be fuzzed" >&2
  exit 1
fi
echo "fuzz: building ${#targets[@]} targets: ${targets[*]}"
build_start=$SECONDS
"${cargo[@]}" fuzz build
echo "fuzz: built in $((SECONDS - build_start)) s"
bin_dir="target/$(rustc -vV | sed -n 's/^host: //p')/release"

# On tmpfs where there is one: the machine and snapshot targets write a tree per input, 2-3
# times faster there than on disk.
scratch_base="${TMPDIR:-/tmp}"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  scratch_base=/dev/shm
fi
scratch="$(mktemp -d -p "$scratch_base" lowlat-fuzz-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT

# Runs one target; its libFuzzer log goes to $scratch/<target>.log, its exit status to
# $scratch/<target>.status.
fuzz_one() {
  local target="$1"
  local corpus="$scratch/corpus/$target"
  mkdir -p "$corpus" "$artifacts/$target"
  if [ -d "seeds/$target" ]; then
    cp seeds/"$target"/* "$corpus"/
  fi
  local status=0
  mkdir -p "$scratch/tmp/$target"
  TMPDIR="$scratch/tmp/$target" "$bin_dir/$target" "$corpus" \
    -max_total_time="$seconds" -timeout="$unit_timeout_s" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target/" >"$scratch/$target.log" 2>&1 || status=$?
  echo "$status" >"$scratch/$target.status"
}

echo "fuzz: running each target for $seconds s, $jobs at a time"
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait

failed=()
for target in "${targets[@]}"; do
  status="$(cat "$scratch/$target.status")"
  log="$scratch/$target.log"
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  corpus_size="$(find "$scratch/corpus/$target" -type f | wc -l)"
  if [ "$status" -eq 0 ]; then
    printf 'fuzz: %-14s ok     %10s executions, corpus %s inputs\n' "$target" "${runs:-?}" "$corpus_size"
  else
    printf 'fuzz: %-14s FAILED %10s executions (exit %s); a crashing input is kept under %s\n' \
      "$target" "${runs:-?}" "$status" "$artifacts/$target/"
    tail -n 60 "$log" | sed "s/^/  $target: /"
    failed+=("$target")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran $seconds s without a failure"
