#!/bin/sh
#
# lowlat-capture.sh: captures a FreeBSD machine for lowlat with the base system only (sh,
# sysctl, vmstat, procstat, cpuset, ifconfig, ps, tar; zstd where the base has it, 12.0 and
# later). The capture is one file that lowlat reads on any machine:
#
#   lowlat --snapshot router.lowlat inventory
#   lowlat --snapshot router.lowlat audit                 # the freebsd-router profile
#   lowlat --snapshot router.lowlat plan --out plan/      # rc.d/lowlat_cpuset and conf lines
#
# usage: lowlat-capture.sh [-o FILE]     (default: ./HOSTNAME.lowlat)
#
# The file is a tar (zstd-compressed when zstd(1) exists) of manifest.json, then under root/:
# freebsd/sysctl/NAME (sysctl -n NAME), freebsd/vmstat-ai, freebsd/procstat-at,
# freebsd/iflib/NIC (sysctl -N dev.DRIVER.UNIT.iflib), freebsd/cpuset/irq/N (cpuset -g -x N for every IRQ), freebsd/cpuset/tid/N (cpuset -g -t N
# for the kernel's threads), freebsd/kernel-pids, freebsd/ifconfig-l, freebsd/uname,
# freebsd/hostname, and etc/rc.conf, etc/sysctl.conf, boot/loader.conf as they are.
# It reads only; run it as root so that cpuset -g sees every thread.
set -eu

usage()
{
	echo "usage: lowlat-capture.sh [-o FILE]"
}

out=""
while getopts o:h opt; do
	case $opt in
	o) out=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
host=$(hostname)
[ -n "$out" ] || out="./${host%%.*}.lowlat"

work=$(mktemp -d "${TMPDIR:-/tmp}/lowlat-capture.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'rm -rf "$work"; exit 130' INT TERM
root="$work/root"
fb="$root/freebsd"
mkdir -p "$fb/sysctl" "$fb/iflib" "$fb/cpuset/irq" "$fb/cpuset/tid" "$root/etc" "$root/boot"

# Writes the output of a command into a file, or no file when the command fails.
capture()
{
	_file=$1
	shift
	if ! "$@" >"$_file" 2>/dev/null; then
		rm -f "$_file"
	fi
}

uname -a >"$fb/uname"
echo "$host" >"$fb/hostname"
for oid in kern.smp.cpus kern.sched.topology_spec kern.osrelease hw.ncpu hw.model \
    vm.ndomains machdep.hyperthreading_allowed net.isr.dispatch net.isr.direct \
    net.isr.maxthreads net.isr.bindthreads net.isr.numthreads; do
	capture "$fb/sysctl/$oid" sysctl -n "$oid"
done
for oid in kern.smp.cpus kern.sched.topology_spec; do
	if [ ! -s "$fb/sysctl/$oid" ]; then
		echo "lowlat-capture.sh: sysctl -n $oid failed; lowlat needs it" >&2
		exit 1
	fi
done
vmstat -ai >"$fb/vmstat-ai"
capture "$fb/procstat-at" procstat -at
ifconfig -l >"$fb/ifconfig-l"

# Each NIC's NUMA domain and iflib queue counts, where the driver has them.
tr ' ' '\n' <"$fb/ifconfig-l" | while read -r nic; do
	driver=${nic%%[0-9]*}
	unit=${nic#"$driver"}
	case $unit in
	'' | *[!0-9]*) continue ;;
	esac
	capture "$fb/sysctl/dev.$driver.$unit.%domain" sysctl -n "dev.$driver.$unit.%domain"
	# iflib drivers (12.0 and later) list a node per queue: dev.igb.0.iflib.rxq0, …
	capture "$fb/iflib/$nic" sysctl -N "dev.$driver.$unit.iflib"
done

# Every IRQ's CPUs.
sed -n 's/^irq\([0-9][0-9]*\):.*/\1/p' "$fb/vmstat-ai" | while read -r irq; do
	capture "$fb/cpuset/irq/$irq" cpuset -g -x "$irq"
done

# The kernel's processes (flag P_SYSTEM, 0x200), and their threads' CPUs.
ps -ax -o pid= -o flags= | while read -r pid flags; do
	if [ $((0x$flags & 0x200)) -ne 0 ]; then
		echo "$pid"
	fi
done >"$fb/kernel-pids"
if [ -f "$fb/procstat-at" ]; then
	awk 'NR == FNR { kernel[$1] = 1; next }
	     FNR > 1 && ($1 in kernel) { print $2 }' "$fb/kernel-pids" "$fb/procstat-at" |
	while read -r tid; do
		capture "$fb/cpuset/tid/$tid" cpuset -g -t "$tid"
	done
fi

for file in /etc/rc.conf /etc/sysctl.conf /boot/loader.conf; do
	if [ -r "$file" ]; then
		cp "$file" "$root$file"
	fi
done

files=$(find "$root" -type f | wc -l | tr -d ' ')
bytes=$(find "$root" -type f -exec cat {} + | wc -c | tr -d ' ')
safe_host=$(printf '%s' "$host" | tr -cd 'A-Za-z0-9._-')
cat >"$work/manifest.json" <<JSON
{
  "schema_version": 2,
  "kind": "snapshot",
  "tool": { "name": "lowlat-capture.sh", "version": "1" },
  "created": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "host": "${safe_host:-unknown}",
  "source_root": "/",
  "files": $files,
  "bytes": $bytes,
  "snapshot_kind": "freebsd"
}
JSON

partial="$out.partial"
if command -v zstd >/dev/null 2>&1; then
	tar -cf - -C "$work" manifest.json root | zstd -q -c >"$partial"
else
	tar -cf - -C "$work" manifest.json root >"$partial"
fi
mv "$partial" "$out"
echo "lowlat-capture.sh: wrote $out ($files files); read it with: lowlat --snapshot $out audit"
