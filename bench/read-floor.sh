#!/usr/bin/env bash
# How close `lowlat inventory --json`, `audit --json` and `plan --out` come to the least time
# that reading their files can take on this machine: for each command, the files it opens on a
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
#   COMMANDS="plan --out"   only these of the commands (names as printed, comma-separated)
#   BIN=FILE            this lowlat binary instead of the release build (not built then)
# Needs strace (Debian package strace). Exit 2 on bad input, 1 when a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
root=${ROOT:?"bench/read-floor.sh: set ROOT to a machine tree (KEEP=1 SCRATCH=DIR SIZES=8192 bench/scale.sh 1 leaves one in DIR/8192)"}
[ -d "$root/proc" ] && [ -d "$root/sys" ] || {
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

python3 - "$bin" "$floor" "$(realpath "$root")" "$work" "$runs" "${COMMANDS:-}" <<'EOF'
import glob, os, re, statistics, subprocess, sys, time

bin_, floor, root, work, runs, only = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
commands = {
    "inventory --json": ["inventory", "--json"],
    "audit --json": ["audit", "--json"],
    "plan --out": ["plan", "--out", os.path.join(work, "plan"), "--force"],
}
if only:
    wanted = [name.strip() for name in only.split(",")]
    unknown = [name for name in wanted if name not in commands]
    if unknown:
        print("bench/read-floor.sh: COMMANDS names %s, not a command here; the commands are: %s" % (", ".join(repr(u) for u in unknown), ", ".join(commands)), file=sys.stderr)
        sys.exit(2)
    commands = {name: commands[name] for name in wanted}

# openat(6</tree/proc>, "interrupts", O_RDONLY|...) = 11</tree/proc/interrupts>
OPENAT = re.compile(r'^openat\((?:-?\d+|AT_FDCWD)<([^>]*)>, "([^"]*)", ([A-Z_|]+)(?:, \d+)?\) = \d+<([^>]*)>$')

def files_opened(name, args):
    """The files (DIR, PATH) lowlat opened for reading under the tree, as it opened them."""
    prefix = os.path.join(work, "trace-" + name.split()[0])
    subprocess.run(["strace", "-ff", "-y", "-qq", "-e", "trace=openat", "-e", "status=successful", "-o", prefix, bin_, "--root", root] + args,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = []
    for trace in glob.glob(prefix + ".*"):
        for line in open(trace, errors="replace"):
            m = OPENAT.match(line.rstrip("\n"))
            if not m or "O_DIRECTORY" in m[3] or "O_PATH" in m[3] or not m[4].startswith(root + "/"):
                continue
            dir_, path = m[1], m[2]
            if path.startswith("/"):
                dir_, path = "/", path.lstrip("/")
            found.append((dir_, path))
    return found

lists = {}
for name, args in commands.items():
    found = files_opened(name, args)
    if not found:
        print("bench/read-floor.sh: strace saw %s open no file under %s" % (name, root), file=sys.stderr)
        sys.exit(1)
    path = os.path.join(work, "files-" + name.split()[0])
    with open(path, "w") as f:
        f.writelines("%s\t%s\n" % entry for entry in found)
    lists[name] = path

samples = {}  # (command, "lowlat" | "floor") -> [(wall s, CPU s)]
for r in range(runs):
    for name, args in commands.items():
        pair = [("lowlat", [bin_, "--root", root] + args), ("floor", [floor, lists[name]])]
        for label, argv in pair[r % 2:] + pair[:r % 2]:
            with open(os.devnull, "wb") as null:
                t0 = time.monotonic()
                child = subprocess.Popen(argv, stdout=subprocess.PIPE if label == "floor" else null, stderr=subprocess.PIPE)
                out = child.stdout.read() if label == "floor" else b""
                err = child.stderr.read()
                _, status, usage = os.wait4(child.pid, 0)
                wall = time.monotonic() - t0
            code = os.waitstatus_to_exitcode(status)
            if code != 0 and not (label == "lowlat" and code == 1):
                print("bench/read-floor.sh: %s exited %d: %s" % (" ".join(argv), code, err.decode(errors="replace").strip()), file=sys.stderr)
                sys.exit(1)
            if label == "floor":
                fields = out.decode().split()
                values = dict(zip(fields[0::2], fields[1::2]))
                samples.setdefault((name, "files"), values)
                sample = (float(values["wall_s"]), float(values["cpu_s"]))
            else:
                sample = (wall, usage.ru_utime + usage.ru_stime)
            samples.setdefault((name, label), []).append(sample)

print("%-18s %9s %12s %10s %9s %10s %9s %18s" % ("command", "files", "MB read", "lowlat s", "CPU s", "floor s", "CPU s", "lowlat/floor wall"))
for name in commands:
    info = samples[(name, "files")]
    low, flo = samples[(name, "lowlat")], samples[(name, "floor")]
    lw, lc = statistics.median(x[0] for x in low), statistics.median(x[1] for x in low)
    fw, fc = statistics.median(x[0] for x in flo), statistics.median(x[1] for x in flo)
    print("%-18s %9s %12.1f %10.3f %9.3f %10.3f %9.3f %18s" % (
        name, info["files"], int(info["bytes"]) / 1e6, lw, lc, fw, fc, "x%.2f" % (lw / fw)))
    print("%-18s floor spread %.3f-%.3f s wall, %.3f-%.3f s CPU, %s threads" % (
        "", min(x[0] for x in flo), max(x[0] for x in flo), min(x[1] for x in flo), max(x[1] for x in flo), info["threads"]))
print("(%d runs each, lowlat and the floor alternating; lowlat's wall and CPU are the whole process, the floor's from its first open to its last close; load average after: %s)" % (
    runs, open("/proc/loadavg").read().split()[0:3]))
EOF
