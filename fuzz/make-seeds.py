#!/usr/bin/env python3
"""Regenerates fuzz/seeds/<target>/ from the fixture machines under tests/fixtures/machines/.

Run from anywhere: `python3 fuzz/make-seeds.py`. It builds lowlat (debug) to take a snapshot of
each fixture, and needs `zstd` on PATH to read the tar inside one. Every seed directory is
emptied and written anew, so the result depends only on the fixtures and on lowlat's snapshot
format. Seeds are kept small (text cut at a line boundary, the machine trees trimmed) so that
libFuzzer mutates them quickly and the committed set stays well under 2 MiB.
"""

import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
REPO = FUZZ.parent
FIXTURES = REPO / "tests" / "fixtures" / "machines"
SCHEMA1_SNAPSHOT = REPO / "tests" / "fixtures" / "schema1" / "snapshot-kvm-guest-2vcpu.lowlat"
SEEDS = FUZZ / "seeds"

# The most bytes of one text seed, and of one file inside a machine seed.
TEXT_CAP = 16 * 1024
FILE_CAP = 8 * 1024
# The most bytes of one machine seed.
MACHINE_CAP = 96 * 1024
# The fixtures whose whole tree becomes a machine and a snapshot seed: a small guest, an RT
# guest, a two-socket server and a four-node SMT server.
TREE_FIXTURES = ["kvm-guest-2vcpu", "rt-guest-4vcpu", "epyc7f32-2s", "milan64-nps4-smt"]
# Files a machine seed holds first.
MACHINE_FIRST = [
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/possible",
    "sys/devices/system/cpu/present",
    "sys/devices/system/cpu/isolated",
    "sys/devices/system/cpu/nohz_full",
    "sys/devices/system/node/online",
    "proc/cmdline",
    "proc/cpuinfo",
    "proc/meminfo",
    "proc/interrupts",
]
# The order in which a machine seed takes files (MACHINE_FIRST, then each pattern); the rest
# follows in path order, until MACHINE_RECORDS records or MACHINE_CAP bytes.
MACHINE_ORDER = [
    re.compile("|".join(f"^{re.escape(f)}$" for f in MACHINE_FIRST)),
    re.compile(r"^sys/devices/system/node/"),
    re.compile(r"^sys/devices/system/cpu/([^/]+|cpu[01]/.*)$"),
    re.compile(r"^(etc|proc)/(?!irq/|[0-9])"),
    re.compile(r"^proc/[0-9]"),
]
# The most records in one machine seed (the target reads at most 512).
MACHINE_RECORDS = 400
# Trees a machine seed leaves out: hundreds of unit files that only say a unit exists.
MACHINE_SKIP = re.compile(r"^(usr/lib|lib|etc)/systemd/")
# Per-process directories a machine seed keeps (the first ones in path order).
MACHINE_PIDS = 3
# Files whose content is a CPU list or mask, for the cpulist target.
CPULIST_FILES = re.compile(
    r"^sys/devices/system/cpu/(online|possible|present|isolated|nohz_full|offline)$"
    r"|^sys/devices/system/cpu/cpu[0-3]/topology/\w+$"
    r"|^sys/devices/system/node/node[0-9]+/cpu(list|map)$"
    r"|^proc/irq/([0-9]+/smp_affinity(_list)?|default_smp_affinity)$"
)
CONFIG_FILES = [
    "etc/os-release",
    "etc/sysconfig/irqbalance",
    "etc/default/irqbalance",
    "etc/tuned/cpu-partitioning-variables.conf",
    "etc/tuned/realtime-virtual-guest-variables.conf",
]
# The capture time every snapshot seed's manifest says.
CAPTURED = "2026-01-01T00:00:00Z"
HUGEPAGE_VALUES = ["2M:512", "1G:4", "2048kB:16", "1GiB:1", "4K:0"]


def cut(data: bytes, cap: int) -> bytes:
    """The first `cap` bytes of `data`, ended at the last newline within them."""
    if len(data) <= cap:
        return data
    head = data[:cap]
    newline = head.rfind(b"\n")
    return head[: newline + 1] if newline > 0 else head


def write_seeds(target: str, seeds: list) -> None:
    """Writes each distinct seed once, named by its first bytes' hash (stable across runs)."""
    out = SEEDS / target
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    seen = set()
    for seed in seeds:
        digest = hashlib.sha1(seed).hexdigest()[:16]
        if seed and digest not in seen:
            seen.add(digest)
            (out / digest).write_bytes(seed)
    print(f"{target}: {len(seen)} seeds, {sum(p.stat().st_size for p in out.iterdir())} bytes")


def fixture_files(fixture: Path, pattern: re.Pattern) -> list:
    return sorted(
        p for p in fixture.rglob("*") if p.is_file() and pattern.search(str(p.relative_to(fixture)))
    )


def text_seeds(names: list) -> list:
    seeds = []
    for fixture in sorted(FIXTURES.iterdir()):
        for name in names:
            path = fixture / name
            if path.is_file():
                seeds.append(cut(path.read_bytes(), TEXT_CAP))
    return seeds


def proc_pid_seeds() -> list:
    seeds = []
    for fixture in sorted(FIXTURES.iterdir()):
        pids = sorted(p for p in (fixture / "proc").glob("[0-9]*") if p.is_dir())[:MACHINE_PIDS]
        for pid in pids:
            for name in ("stat", "status"):
                if (pid / name).is_file():
                    seeds.append((pid / name).read_bytes())
    return seeds


def smbios_seeds() -> list:
    seeds = []
    for fixture in sorted(FIXTURES.iterdir()):
        tables = fixture / "sys/firmware/dmi/tables"
        if (tables / "DMI").is_file():
            entry = (tables / "smbios_entry_point").read_bytes()
            seeds.append(bytes([len(entry)]) + entry + (tables / "DMI").read_bytes())
    return seeds


def lowlat(*args: str) -> None:
    subprocess.run(
        ["cargo", "run", "--quiet", "--manifest-path", str(REPO / "Cargo.toml"), "--", *args],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def machine_rank(path: str) -> int:
    """Which files a machine seed keeps first: the lower, the earlier."""
    for rank, pattern in enumerate(MACHINE_ORDER):
        if pattern.match(path):
            return rank
    return len(MACHINE_ORDER)


def machine_seed(tree: Path) -> bytes:
    """The tree as `PATH\\0CONTENT\\0` records (the machine target's input)."""
    files = [p.relative_to(tree).as_posix() for p in sorted(tree.rglob("*")) if p.is_file()]
    pids = sorted({f.split("/")[1] for f in files if re.match(r"proc/[0-9]+/", f)})
    kept_pids = set(pids[:MACHINE_PIDS])
    files = [
        f
        for f in files
        if not MACHINE_SKIP.match(f)
        and not (re.match(r"proc/[0-9]+/", f) and f.split("/")[1] not in kept_pids)
    ]
    ordered = sorted(files, key=lambda f: (machine_rank(f), f))[:MACHINE_RECORDS]
    seed = b""
    for name in ordered:
        record = name.encode() + b"\0" + cut((tree / name).read_bytes(), FILE_CAP) + b"\0"
        if len(seed) + len(record) > MACHINE_CAP:
            continue
        seed += record
    return seed


def pinned_tar(snapshot_tar: bytes, keep: int = -1) -> bytes:
    """The manifest and the first `keep` other entries (all if negative) of a snapshot's tar,
    with the manifest's capture time pinned to CAPTURED, so that the seeds depend only on the
    fixtures."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(snapshot_tar)) as full, tarfile.open(
        fileobj=out, mode="w", format=tarfile.GNU_FORMAT
    ) as pinned:
        members = full.getmembers()
        for member in members if keep < 0 else members[: keep + 1]:
            data = full.extractfile(member).read() if member.isfile() else None
            if member.name == "manifest.json":
                manifest = json.loads(data)
                manifest["created"] = CAPTURED
                data = json.dumps(manifest, indent=2).encode()
                member.size = len(data)
            pinned.addfile(member, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def hostile_tar(manifest: bytes, member: tarfile.TarInfo) -> bytes:
    """A snapshot's manifest followed by one entry the opener must refuse."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return out.getvalue()


def hostile_members() -> list:
    members = []
    for name in ("root/../escaped", "/etc/escaped", "root/proc/../../escaped"):
        info = tarfile.TarInfo(name)
        info.size = 1
        members.append(info)
    for kind, target in ((tarfile.SYMTYPE, "/etc/passwd"), (tarfile.LNKTYPE, "manifest.json")):
        info = tarfile.TarInfo("root/etc/link")
        info.type = kind
        info.linkname = target
        members.append(info)
    fifo = tarfile.TarInfo("root/proc/cpuinfo")
    fifo.type = tarfile.FIFOTYPE
    members.append(fifo)
    return members


def tree_seeds(work: Path) -> tuple:
    machines, snapshots = [], [SCHEMA1_SNAPSHOT.read_bytes()]
    tars = []
    for name in TREE_FIXTURES:
        snapshot = work / f"{name}.lowlat"
        tree = work / name
        lowlat("--root", str(FIXTURES / name), "snapshot", "-o", str(snapshot))
        lowlat("--snapshot", str(snapshot), "snapshot", "--extract", str(tree))
        machines.append(machine_seed(tree))
        tar = subprocess.run(["zstd", "-dc", str(snapshot)], check=True, capture_output=True).stdout
        tars.append(tar)
    # One whole compressed snapshot in this lowlat's layout (the smallest), beside the schema-1
    # one; the rest as trimmed tars, which the snapshot target compresses itself.
    whole = pinned_tar(tars[1])
    compressed = subprocess.run(["zstd", "-q", "-c"], input=whole, check=True, capture_output=True)
    snapshots.append(compressed.stdout)
    snapshots += [pinned_tar(tar, 40) for tar in tars]
    with tarfile.open(fileobj=io.BytesIO(snapshots[-1])) as full:
        manifest = full.extractfile("manifest.json").read()
    snapshots += [hostile_tar(manifest, member) for member in hostile_members()]
    return machines, snapshots


def main() -> int:
    if shutil.which("zstd") is None:
        print("make-seeds: zstd is not on PATH (apt-get install zstd)", file=sys.stderr)
        return 1
    write_seeds("cpuinfo", text_seeds(["proc/cpuinfo"]))
    write_seeds("interrupts", text_seeds(["proc/interrupts", "proc/softirqs"]))
    write_seeds("cmdline", text_seeds(["proc/cmdline", "etc/tuned/bootcmdline"]))
    write_seeds("config_files", text_seeds(CONFIG_FILES))
    write_seeds("proc_pid", proc_pid_seeds())
    write_seeds("smbios", smbios_seeds())
    write_seeds("hugepages", [v.encode() for v in HUGEPAGE_VALUES])
    freebsd = REPO / "tests" / "data" / "freebsd"
    write_seeds(
        "freebsd_outputs",
        [cut(p.read_bytes(), TEXT_CAP) for p in sorted(freebsd.iterdir()) if p.suffix in (".txt", ".xml")],
    )
    cpulists = []
    for fixture in sorted(FIXTURES.iterdir()):
        cpulists += [p.read_bytes().strip() for p in fixture_files(fixture, CPULIST_FILES)[:40]]
    write_seeds("cpulist", cpulists)
    with tempfile.TemporaryDirectory(prefix="lowlat-seeds-") as work:
        machines, snapshots = tree_seeds(Path(work))
    write_seeds("machine", machines)
    write_seeds("snapshot", snapshots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
