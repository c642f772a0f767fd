#!/usr/bin/env bash
# How close `lowlat inventory`, `inventory --json`, `audit --json` and `plan --out` come to the
# least time that reading their files can take on this machine: for each command, the files it opens on a
# tree (traced once with strace) are read again by examples/read_floor.rs with nothing else
# done (no parsing, no model, no output), spread perfectly over all CPUs, each directory
# opened once as lowlat does. Then lowlat and that floor run alternately, RUNS times each, and
# the script prints per command the median wall and CPU time of both, their ratio, and the
# floor's own spread (min-max). The floor is what the kernel needs to open, copy and close the
# files; whatever a command does besides reading comes on top of it.
#
# Usage: ROOT=TREE bench/read-floor.sh [RUNS]     (default 5)
#   ROOT=TREE           a generated machine tree, e.g. the 8,192-CPU one that
#                       `KEEP=1 SCRATCH=DIR SIZES=8192 bench/scale.sh 1` leaves in DIR/8192
#   COMMANDS="plan --out"   only these of the commands (names as printed, comma-separated;
#                       the same commands as bench/scale.sh, bench/scale_commands.py)
#   SPLIT=1             also time the floor of the first command's files by kind (/proc/interrupts,
#                       /proc/PID, /proc/irq, the CPU directories, the rest), on one thread
#   BIN=FILE            this lowlat binary instead of the release build (not built then)
# Needs strace (Debian package strace). Exit 2 on bad input, 1 when a run fails.
# Target (issue 17): each command under 2 s of wall time on the tree. Exit: 0 met, 1 missed,
# 2 a run failed (bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

runs=${1:-5}
root=${ROOT:?"bench/read-floor.sh: set ROOT to a machine tree (KEEP=1 SCRATCH=DIR SIZES=8192 bench/scale.sh 1 leaves one in DIR/8192)"}
{ [ -d "$root/proc" ] && [ -d "$root/sys" ]; } || {
  echo "bench/read-floor.sh: ROOT=$root has no proc/ and sys/: not a machine tree" >&2
  exit 2
}
command -v strace >/dev/null || {
  echo "bench/read-floor.sh: needs strace (apt-get install strace)" >&2
  exit 2
}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  bin=${CARGO_TARGET_DIR:-target}/release/lowlat
else
  bin=$BIN
fi
cargo build --release --quiet --example read_floor
floor=${CARGO_TARGET_DIR:-target}/release/examples/read_floor
work=$(mktemp -d "${TMPDIR:-/tmp}/lowlat-floor.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Exit 2 from the analysis: a run failed (bench/lib.sh).
status=0
python3 - "$bin" "$floor" "$(realpath "$root")" "$work" "$runs" "${COMMANDS:-}" "${SPLIT:-0}" <<'EOF' || status=$?
import glob, os, re, statistics, subprocess, sys, time

bin_, floor, root, work, runs, only, split = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], sys.argv[7] == "1"
sys.path.insert(0, "bench")
from scale_commands import chosen, commands as arguments
commands = chosen(only, "bench/read-floor.sh")
args = arguments(os.path.join(work, "plan"))

# openat(6</tree/proc>, "interrupts", O_RDONLY|...) = 11</tree/proc/interrupts>
OPENAT = re.compile(r'^openat\((?:-?\d+|AT_FDCWD)<([^>]*)>, "([^"]*)", ([A-Z_|]+)(?:, \d+)?\) = \d+<([^>]*)>$')

# The kinds of files SPLIT=1 times apart, by the path under the tree (the first that matches).
KINDS = [
    ("/proc/interrupts", re.compile(r"^proc/interrupts$")),
    ("/proc/PID/*", re.compile(r"^proc/\d+/")),
    ("/proc/irq/*", re.compile(r"^proc/irq/")),
    ("sys/devices/system/cpu/*", re.compile(r"^sys/devices/system/cpu/")),
    ("the rest", re.compile(r"")),
]

def files_opened(index, argv):
    """The files lowlat opened for reading under the tree: (DIR, PATH as opened, path under
    the tree)."""
    prefix = os.path.join(work, "trace-%d" % index)
    done = subprocess.run(["strace", "-ff", "-y", "-qq", "-e", "trace=openat", "-e", "status=successful", "-o", prefix, bin_, "--root", root] + argv,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if done.returncode not in (0, 1):  # 1: the audit found failures
        print("bench/read-floor.sh: %s under strace exited %d" % (" ".join(argv), done.returncode), file=sys.stderr)
        sys.exit(2)
    found = []
    for trace in glob.glob(prefix + ".*"):
        for line in open(trace, errors="replace"):
            m = OPENAT.match(line.rstrip("\n"))
            if not m or "O_DIRECTORY" in m[3] or "O_PATH" in m[3] or not m[4].startswith(root + "/"):
                continue
            dir_, path = m[1], m[2]
            if path.startswith("/"):
                dir_, path = "/", path.lstrip("/")
            found.append((dir_, path, m[4][len(root) + 1:]))
    return found

def write_list(name, entries):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.writelines("%s\t%s\n" % (dir_, opened) for dir_, opened, _ in entries)
    return path

def run_floor(argv):
    """One run of the floor: its printed fields."""
    done = subprocess.run(argv, capture_output=True)
    if done.returncode != 0:
        print("bench/read-floor.sh: %s exited %d: %s" % (" ".join(argv), done.returncode, done.stderr.decode(errors="replace").strip()), file=sys.stderr)
        sys.exit(2)
    fields = done.stdout.decode().split()
    return dict(zip(fields[0::2], fields[1::2]))

lists, opened = {}, {}
for index, name in enumerate(commands):
    found = files_opened(index, args[name])
    if not found:
        print("bench/read-floor.sh: strace saw %s open no file under %s" % (name, root), file=sys.stderr)
        sys.exit(2)
    lists[name] = write_list("files-%d" % index, found)
    opened[name] = found

samples = {}  # (command, "lowlat" | "floor") -> [(wall s, CPU s)]
info = {}  # command -> the floor's fields (files, bytes, threads)
for r in range(runs):
    for name in commands:
        for label in ["lowlat", "floor"][r % 2:] + ["lowlat", "floor"][:r % 2]:
            if label == "floor":
                values = run_floor([floor, lists[name]])
                info.setdefault(name, values)
                samples.setdefault((name, label), []).append((float(values["wall_s"]), float(values["cpu_s"])))
                continue
            argv = [bin_, "--root", root] + args[name]
            with open(os.devnull, "wb") as null:
                t0 = time.monotonic()
                child = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE)
                err = child.stderr.read()
                _, status, usage = os.wait4(child.pid, 0)
                wall = time.monotonic() - t0
            code = os.waitstatus_to_exitcode(status)
            if code not in (0, 1):  # 1: the audit found failures
                print("bench/read-floor.sh: %s exited %d: %s" % (" ".join(argv), code, err.decode(errors="replace").strip()), file=sys.stderr)
                sys.exit(2)
            samples.setdefault((name, label), []).append((wall, usage.ru_utime + usage.ru_stime))

targets = open(os.path.join(work, "targets"), "w")
print("%-18s %9s %12s %10s %9s %10s %9s %18s" % ("command", "files", "MB read", "lowlat s", "CPU s", "floor s", "CPU s", "lowlat/floor wall"))
for name in commands:
    low, flo = samples[(name, "lowlat")], samples[(name, "floor")]
    lw, lc = statistics.median(x[0] for x in low), statistics.median(x[1] for x in low)
    fw, fc = statistics.median(x[0] for x in flo), statistics.median(x[1] for x in flo)
    print("%-18s %9s %12.1f %10.3f %9.3f %10.3f %9.3f %18s" % (
        name, info[name]["files"], int(info[name]["bytes"]) / 1e6, lw, lc, fw, fc, "x%.2f" % (lw / fw)))
    # Target (issue 17): each command under 2 s of wall time on the tree.
    print("below\t%s, median wall (s)\t%.3f\t2" % (name, lw), file=targets)
    print("%-18s floor spread %.3f-%.3f s wall, %.3f-%.3f s CPU, %s threads" % (
        "", min(x[0] for x in flo), max(x[0] for x in flo), min(x[1] for x in flo), max(x[1] for x in flo), info[name]["threads"]))
print("(%d runs each, lowlat and the floor alternating; lowlat's wall and CPU are the whole process, the floor's from its first open to its last close; load average after: %s)" % (
    runs, open("/proc/loadavg").read().split()[0:3]))

if split:
    # The floor of the first command's files by kind, on one thread: where the floor goes.
    name = commands[0]
    by_kind = {}
    for entry in opened[name]:
        kind = next(kind for kind, pattern in KINDS if pattern.match(entry[2]))
        by_kind.setdefault(kind, []).append(entry)
    print("\nThe floor of %s by kind of file, one thread (median of %d):" % (name, runs))
    print("%-26s %9s %12s %9s" % ("files", "count", "MB read", "CPU s"))
    for index, (kind, _) in enumerate(KINDS):
        if kind not in by_kind:
            continue
        path = write_list("kind-%d" % index, by_kind[kind])
        values = [run_floor([floor, path, "1"]) for _ in range(runs)]
        print("%-26s %9s %12.1f %9.3f" % (kind, values[0]["files"], int(values[0]["bytes"]) / 1e6,
                                          statistics.median(float(v["cpu_s"]) for v in values)))
EOF
case $status in
  0) ;;
  2) exit 2 ;;
  *) echo "bench/read-floor.sh: the analysis failed ($status)" >&2; exit 2 ;;
esac
bench_targets "$work/targets"
bench_end
