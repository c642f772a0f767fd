#!/bin/sh
# Writes the recorded command outputs of seeds/004's router into DIR, in the layout the
# stand-ins of tests/freebsd/bin answer from: FreeBSD 8.2 on a 4-core CPU (no SMT, one NUMA
# domain), 4 × igb with 4 queues each, which igb(4) binds queue Y of every NIC to CPU Y, and
# the dummynet kernel thread unpinned. The formats are those of the real outputs in
# tests/data/freebsd (vmstat -ai's name/total/rate columns, procstat's 16-wide name columns
# of 8.x-11.x, cpuset -g's "WHAT ID mask: LIST", topology_spec's groups).
#   usage: generate.sh DIR
set -eu
dir=${1:?usage: generate.sh DIR}
mkdir -p "$dir/sysctl" "$dir/irq" "$dir/tid"

echo 4 >"$dir/sysctl/kern.smp.cpus"
echo 4 >"$dir/sysctl/hw.ncpu"
echo 8.2-RELEASE >"$dir/sysctl/kern.osrelease"
echo "Intel(R) Core(TM) i5-2400 CPU @ 3.10GHz" >"$dir/sysctl/hw.model"
echo 1 >"$dir/sysctl/net.isr.direct"
echo 1 >"$dir/sysctl/net.isr.maxthreads"
echo 0 >"$dir/sysctl/net.isr.bindthreads"
cat >"$dir/sysctl/kern.sched.topology_spec" <<'EOF'
<groups>
 <group level="1" cache-level="3">
  <cpu count="4" mask="0xf">0, 1, 2, 3</cpu>
  <children>
   <group level="2" cache-level="2">
    <cpu count="1" mask="0x1">0</cpu>
   </group>
   <group level="2" cache-level="2">
    <cpu count="1" mask="0x2">1</cpu>
   </group>
   <group level="2" cache-level="2">
    <cpu count="1" mask="0x4">2</cpu>
   </group>
   <group level="2" cache-level="2">
    <cpu count="1" mask="0x8">3</cpu>
   </group>
  </children>
 </group>
</groups>
EOF
echo "FreeBSD router.example.net 8.2-RELEASE FreeBSD 8.2-RELEASE #0: Thu Feb 17 02:41:51 UTC 2011     root@mason.cse.buffalo.edu:/usr/obj/usr/src/sys/GENERIC  amd64" >"$dir/uname"
echo router.example.net >"$dir/hostname"
echo "igb0 igb1 igb2 igb3 lo0 ng0 ng1" >"$dir/ifconfig-l"

# vmstat -ai: queue 0 of every NIC carries the PPPoE/GRE traffic (one flow hash).
line() { printf '%-18s %20s %10s\n' "$1" "$2" "$3"; }
{
	line interrupt total rate
	line "irq1: atkbd0" 2 0
	line "irq14: ata0" 37 0
	line "irq16: ehci0" 21 0
	for cpu in 0 1 2 3; do
		line "cpu$cpu: timer" 172800512 2000
	done
	irq=256
	for nic in 0 1 2 3; do
		for que in 0 1 2 3; do
			if [ "$que" = 0 ]; then total=1036803072 rate=12000; else total=129600384 rate=1500; fi
			line "irq$irq: igb$nic:que $que" "$total" "$rate"
			echo "$que" >"$dir/irq/$irq"
			irq=$((irq + 1))
		done
		line "irq$irq: igb$nic:link" 4 0
		echo 0,1,2,3 >"$dir/irq/$irq"
		irq=$((irq + 1))
	done
	line Total 6739214563 78000
} >"$dir/vmstat-ai"
for irq in 1 14 16; do echo 0,1,2,3 >"$dir/irq/$irq"; done

# procstat -at (8.x-11.x: 16-wide COMM and TDNAME).
thread() {
	printf '%5s %6s %-16s %-16s %3s %4s %-7s %-9s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8"
	echo "$9" >"$dir/tid/$2"
}
{
	printf '%5s %6s %-16s %-16s %3s %4s %-7s %-9s\n' PID TID COMM TDNAME CPU PRI STATE WCHAN
	thread 0 100000 kernel swapper 0 44 sleep sched 0,1,2,3
	thread 0 100011 kernel firmware\ taskq 0 108 sleep - 0,1,2,3
	thread 0 100037 kernel dummynet 1 8 run - 0,1,2,3
	thread 0 100052 kernel igb0\ que 0 8 sleep - 0,1,2,3
	thread 10 100001 audit - 0 108 sleep - 0,1,2,3
	thread 11 100002 idle idle:\ cpu3 3 255 run - 3
	thread 11 100003 idle idle:\ cpu2 2 255 run - 2
	thread 11 100004 idle idle:\ cpu1 1 255 run - 1
	thread 11 100005 idle idle:\ cpu0 0 255 run - 0
	thread 12 100006 intr swi4:\ clock 0 40 wait - 0,1,2,3
	thread 12 100012 intr swi1:\ netisr\ 0 0 28 wait - 0,1,2,3
	thread 12 100040 intr irq256:\ igb0:que 0 16 wait - 0
	thread 1 100008 init - 2 152 sleep wait 0,1,2,3
	thread 1460 100091 mpd5 - 3 120 sleep select 0,1,2,3
} >"$dir/procstat-at"

# ps -ax -o pid= -o flags=: the kernel's processes carry P_SYSTEM (0x200).
printf '%5s %8s\n' 0 10000284 10 10000204 11 10000204 12 10000204 1 10004100 1460 10000100 >"$dir/ps"
