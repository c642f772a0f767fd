#!/usr/bin/env bash
# Times `lowlat inventory --json`, `lowlat audit --json` and `lowlat plan --out DIR --force` on
# generated large machines (tests/fixtures/generate.py --large) and prints, per size and
# command, the median wall time, the median CPU time (user + system: steadier than wall time
# on a shared machine) and the median peak RSS (the child's ru_maxrss from wait4) over RUNS
# runs, with the exit codes seen. `lowlat inventory` (the one-screen summary) is timed too: it
# is the model read with next to no output, the cost every command pays first. Release build
# (PROFILE=profiling for the profiling build, minutes to build instead of half an hour). Sizes
# alternate: every round runs every size once, in a rotated order, so a slow minute of this
# shared machine spreads over all sizes.
#
# Sizes (CPUs; EPYC-like 128 cores x 2 threads per package, NPS4, 8-core L3 groups):
#   512   2 packages,   4,000 IRQs,   5,000 tasks (the synthetic-512 machine)
#   N     N/256 packages, 50,000 IRQs, 100,000 tasks (N = 2048, 4096, 8192, ...)
# Targets (issue 17): 8,192 CPUs each command < 2 s and < 200 MB; 512 CPUs < 150 ms.
#
# Disk: the trees are written as the kernel prints them, so /proc/interrupts is dense
# (~11 bytes per CPU per IRQ: 1.1 GB at 2,048 CPUs, 4.5 GB at 8,192) and each of the ~1 million
# small files of an 8,192-CPU tree takes a disk block. The script estimates the space first
# and refuses (exit 2) when the scratch file system does not have it with 2 GB to spare; the
# trees are removed on exit unless KEEP=1.
#
# Usage: bench/scale.sh [RUNS]     (default 5)
#   SIZES="512 2048 4096 8192"     sizes to run (default "512 2048 8192")
#   SCRATCH=DIR                    where the trees go (default: a new directory under $TMPDIR or /tmp)
#   KEEP=1                         keep the trees (and reuse them: a tree already in SCRATCH is not rewritten)
#   PROFILE=profiling              time the profiling build (Cargo.toml) instead of the release build
#   BIN=FILE                       time this lowlat binary instead, without building (a "before" copy)
#   COMMANDS="plan --out"          time only these of the commands (names as printed, comma-separated)
#   BEFORE=FILE                    also time this binary (a copy of the build before a change), run
#                                  for run alternating with the other, and print both: a before/after
#                                  comparison under the same load
# Exit: 0 the targets of the sizes run met, 1 one missed, 2 a run failed (bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

runs=${1:-5}
sizes=${SIZES:-512 2048 8192}
profile=${PROFILE:-release}
bin=${BIN:-${CARGO_TARGET_DIR:-target}/$profile/lowlat}
scratch=${SCRATCH:-$(mktemp -d "${TMPDIR:-/tmp}/lowlat-scale.XXXXXX")}
mkdir -p "$scratch"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$scratch"' EXIT

# shape SIZE: the generator's parameters for SIZE CPUs.
shape() {
  if [ "$1" = 512 ]; then
    echo "--sockets 2 --cores 128 --threads 2 --nps 4 --l3-cores 8 --irqs 4000 --tasks 5000"
  elif [ $(($1 % 256)) = 0 ]; then
    echo "--sockets $(($1 / 256)) --cores 128 --threads 2 --nps 4 --l3-cores 8 --irqs 50000 --tasks 100000"
  else
    echo "bench/scale.sh: size $1 is not 512 or a multiple of 256 CPUs" >&2
    exit 2
  fi
}

for size in $sizes; do shape "$size" >/dev/null; done

# Estimated bytes of one tree: dense /proc/interrupts plus a 4 KiB block per file (60 files per
# CPU, 5 per IRQ, 3 per task).
need=0
for size in $sizes; do
  read -r _ _ _ _ _ _ _ _ _ _ _ irqs _ tasks <<<"$(shape "$size")"
  [ -d "$scratch/$size" ] && continue
  need=$((need + size * irqs * 11 + (60 * size + 5 * irqs + 3 * tasks) * 4096))
done
avail=$(($(df --output=avail -k "$scratch" | tail -1) * 1024))
if [ "$need" -gt $((avail - 2 * 1024 * 1024 * 1024)) ]; then
  echo "bench/scale.sh: the trees for sizes \"$sizes\" need about $((need >> 30)) GiB in $scratch," \
    "which has $((avail >> 30)) GiB free (2 GiB kept spare); set SIZES to fewer sizes or SCRATCH to a larger disk" >&2
  exit 2
fi

[ -n "${BIN:-}" ] || cargo build --profile "$profile" --quiet
for size in $sizes; do
  [ -d "$scratch/$size" ] && continue
  # shellcheck disable=SC2046 # the shape is a list of flags
  bench_do 0 python3 tests/fixtures/generate.py --large "$scratch/$size" $(shape "$size") >/dev/null
done

# Exit 2 from the analysis: a run exited with a status it must not have (bench/lib.sh).
status=0
# shellcheck disable=SC2086 # the sizes, one argument each
python3 - "$bin" "${BEFORE:-}" "$scratch" "$runs" "${COMMANDS:-}" $sizes <<'EOF' || status=$?
import os, statistics, subprocess, sys, time

bin_, before, scratch, runs, only, sizes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:]
binaries = [("after", bin_), ("before", before)] if before else [("", bin_)]
sys.path.insert(0, "bench")
from scale_commands import chosen, commands as arguments
commands = chosen(only, "bench/scale.sh")
samples = {}  # (binary, size, command) -> [(wall s, CPU s, peak RSS KiB, exit code)]
for r in range(runs):
    order = sizes[r % len(sizes):] + sizes[:r % len(sizes)]
    for size in order:
        root = os.path.join(scratch, size)
        args = arguments(os.path.join(scratch, "plan-" + size))
        for name in commands:
            for label, path in binaries[r % 2:] + binaries[:r % 2]:
                argv = [path, "--root", root] + args[name]
                with open(os.devnull, "wb") as null:
                    t0 = time.monotonic()
                    child = subprocess.Popen(argv, stdout=null, stderr=null)
                    _, status, usage = os.wait4(child.pid, 0)
                    wall = time.monotonic() - t0
                code = os.waitstatus_to_exitcode(status)
                if code not in (0, 1):  # 1: the audit found failures
                    print("bench/scale.sh: %s exited %d; no timing of it is valid" % (" ".join(argv), code), file=sys.stderr)
                    sys.exit(2)
                cpu = usage.ru_utime + usage.ru_stime
                samples.setdefault((label, size, name), []).append((wall, cpu, usage.ru_maxrss, code))
targets = open(os.path.join(scratch, "targets"), "w")
print("%-6s %-18s %-6s %10s %10s %14s %6s" % ("CPUs", "command", "binary", "median s", "CPU s", "peak RSS MiB", "exit"))
for size in sizes:
    for name in commands:
        for label, _ in binaries:
            s = samples[(label, size, name)]
            codes = sorted({c for *_, c in s})
            print("%-6s %-18s %-6s %10.3f %10.3f %14.1f %6s" % (
                size, name, label, statistics.median(x[0] for x in s), statistics.median(x[1] for x in s),
                statistics.median(x[2] for x in s) / 1024, ",".join(str(c) for c in codes)))
            if label in ("", "after"):
                # Targets (issue 17): under 2 s and 200 MB at 8,192 CPUs, 150 ms at 512.
                wall = statistics.median(x[0] for x in s)
                if size == "512":
                    print("below\t%s at 512 CPUs, median wall (s)\t%.3f\t0.150" % (name, wall), file=targets)
                elif size == "8192":
                    print("below\t%s at 8192 CPUs, median wall (s)\t%.3f\t2" % (name, wall), file=targets)
                    print("below\t%s at 8192 CPUs, peak RSS (MiB)\t%.1f\t200" % (name, statistics.median(x[2] for x in s) / 1024), file=targets)
print("(%d runs each, sizes alternating%s; %s; load average after: %s)" % (
    runs, ", before and after alternating" if before else "", " vs ".join(p for _, p in binaries),
    open("/proc/loadavg").read().split()[0:3]))
EOF
case $status in
  0) ;;
  *) echo "bench/scale.sh: a run failed or the analysis did ($status)" >&2; exit 2 ;;
esac
targets=$scratch/targets
if [ -s "$targets" ]; then
  bench_targets "$targets"
else
  echo "bench/scale.sh: no size with a target (512, 8192) in \"$sizes\"" >&2
fi
bench_end
