#!/bin/sh
#
# PROVIDE: lowlat_cpuset
# REQUIRE: FILESYSTEMS
# BEFORE: netif
# KEYWORD: nojail
#
# Binds each NIC queue interrupt and the busy kernel threads to the CPUs lowlat planned for
# @HOST@ (@NCPU@ CPUs). Written by lowlat @VERSION@; enable it at boot with
#   sysrc lowlat_cpuset_enable=YES
#
#   start   records the CPUs of each interrupt and thread in $lowlat_cpuset_state (once:
#           a second start keeps the first record), then binds it; an interrupt or thread
#           that is not there is skipped with a message and the rest is bound
#   stop    puts back every recorded CPU list, newest first, then removes the record
#   status  compares each binding with the plan; exit status 0 when all are as planned
#
# Interrupts are found by their vmstat -ai name and threads by their procstat -at name,
# since IRQ numbers and thread ids change from boot to boot.

# shellcheck source=/dev/null
. /etc/rc.subr

name="lowlat_cpuset"
# shellcheck disable=SC2034
rcvar="lowlat_cpuset_enable"
# shellcheck disable=SC2034
start_cmd="lowlat_cpuset_start"
# shellcheck disable=SC2034
stop_cmd="lowlat_cpuset_stop"
# shellcheck disable=SC2034
status_cmd="lowlat_cpuset_status"
# shellcheck disable=SC2034
extra_commands="status"

load_rc_config "$name"
: "${lowlat_cpuset_enable:=NO}"
: "${lowlat_cpuset_state:=/var/db/lowlat_cpuset.state}"

TAB=$(printf '\t')
PLANNED_NCPU=@NCPU@

# KIND<TAB>NAME<TAB>CPUS: an interrupt by its vmstat -ai name, a thread by its procstat name.
PLAN='@PLAN@'

# The IRQ number of the interrupt named $1 in vmstat -ai now (nothing when it is not there).
lowlat_cpuset_irq()
{
	vmstat -ai | awk -v want="$1" '
		$1 ~ /^irq[0-9]+:$/ {
			name = $2
			for (i = 3; i <= NF - 2; i++)
				name = name " " $i
			if (name == want) {
				sub(/^irq/, "", $1)
				sub(/:$/, "", $1)
				print $1
				exit
			}
		}'
}

# The ids of the kernel threads named $1 in procstat -at now (TDNAME, or COMM without one).
lowlat_cpuset_tids()
{
	procstat -at | awk -v want="$1" '
		NR == 1 {
			c = index($0, "COMM")
			t = index($0, "TDNAME")
			w = index($0, " CPU")
			next
		}
		{
			comm = substr($0, c, t - c)
			td = substr($0, t, w - t)
			gsub(/^ +| +$/, "", comm)
			gsub(/^ +| +$/, "", td)
			if (td == want || ((td == "-" || td == "") && comm == want))
				print $2
		}'
}

# The CPU list of cpuset -g $1 $2 (-x IRQ or -t TID), without spaces; nothing on an error.
lowlat_cpuset_get()
{
	cpuset -g "$1" "$2" 2>/dev/null | sed -n 's/.* mask: *//p' | head -n 1 | tr -d ' '
}

# Whether the record holds KIND $1 KEY $2 already.
lowlat_cpuset_recorded()
{
	[ -f "$lowlat_cpuset_state" ] &&
	    awk -F "$TAB" -v kind="$1" -v key="$2" \
		'$1 == kind && $2 == key { found = 1 } END { exit !found }' "$lowlat_cpuset_state"
}

# Binds KIND $1 KEY $2 (cpuset flag $3, target $4) to CPUs $5, recording its CPUs first.
lowlat_cpuset_bind()
{
	_prior=$(lowlat_cpuset_get "$3" "$4")
	if [ -z "$_prior" ]; then
		echo "lowlat_cpuset: cannot read the CPUs of $1 $2 (cpuset -g $3 $4); skipped"
		return 1
	fi
	if ! lowlat_cpuset_recorded "$1" "$2"; then
		printf '%s\t%s\t%s\n' "$1" "$2" "$_prior" >>"$lowlat_cpuset_state" || return 1
	fi
	[ "$_prior" = "$5" ] && return 0
	cpuset -l "$5" "$3" "$4"
}

lowlat_cpuset_start()
{
	_ncpu=$(sysctl -n kern.smp.cpus)
	if [ "$_ncpu" != "$PLANNED_NCPU" ]; then
		echo "lowlat_cpuset: planned for $PLANNED_NCPU CPUs, this machine has $_ncpu;" \
		    "capture it again and make a new plan" >&2
		return 1
	fi
	echo "Binding NIC queue interrupts and kernel threads to their CPUs (lowlat)."
	_failed=0
	while IFS="$TAB" read -r _kind _name _cpus; do
		case $_kind in
		irq)
			_irq=$(lowlat_cpuset_irq "$_name")
			if [ -z "$_irq" ]; then
				echo "lowlat_cpuset: interrupt '$_name' is not in vmstat -ai; skipped"
				continue
			fi
			lowlat_cpuset_bind irq "$_name" -x "$_irq" "$_cpus" || _failed=1
			;;
		thread)
			_tids=$(lowlat_cpuset_tids "$_name")
			if [ -z "$_tids" ]; then
				echo "lowlat_cpuset: kernel thread '$_name' is not in procstat -at; skipped"
				continue
			fi
			for _tid in $_tids; do
				lowlat_cpuset_bind thread "$_tid" -t "$_tid" "$_cpus" || _failed=1
			done
			;;
		esac
	done <<EOF
$PLAN
EOF
	return $_failed
}

lowlat_cpuset_stop()
{
	if [ ! -f "$lowlat_cpuset_state" ]; then
		echo "lowlat_cpuset: no record in $lowlat_cpuset_state; nothing to put back"
		return 0
	fi
	_failed=0
	_records=$(awk '{ line[NR] = $0 } END { for (i = NR; i > 0; i--) print line[i] }' \
	    "$lowlat_cpuset_state")
	while IFS="$TAB" read -r _kind _key _prior; do
		case $_kind in
		irq)
			_irq=$(lowlat_cpuset_irq "$_key")
			if [ -z "$_irq" ]; then
				echo "lowlat_cpuset: interrupt '$_key' is not in vmstat -ai; not put back"
				continue
			fi
			cpuset -l "$_prior" -x "$_irq" || _failed=1
			;;
		thread)
			if [ -z "$(lowlat_cpuset_get -t "$_key")" ]; then
				echo "lowlat_cpuset: thread $_key is gone; not put back"
				continue
			fi
			cpuset -l "$_prior" -t "$_key" || _failed=1
			;;
		esac
	done <<EOF
$_records
EOF
	if [ "$_failed" = 0 ]; then
		rm -f "$lowlat_cpuset_state"
		echo "lowlat_cpuset: every recorded binding put back."
	else
		echo "lowlat_cpuset: some bindings were not put back; $lowlat_cpuset_state kept" >&2
	fi
	return $_failed
}

lowlat_cpuset_status()
{
	_bad=0
	while IFS="$TAB" read -r _kind _name _cpus; do
		case $_kind in
		irq)
			_irq=$(lowlat_cpuset_irq "$_name")
			if [ -z "$_irq" ]; then
				echo "missing: interrupt '$_name' is not in vmstat -ai"
				_bad=1
				continue
			fi
			_now=$(lowlat_cpuset_get -x "$_irq")
			if [ "$_now" = "$_cpus" ]; then
				echo "ok: irq $_irq ($_name) on CPU $_cpus"
			else
				echo "drift: irq $_irq ($_name) on CPUs ${_now:-?}, planned $_cpus"
				_bad=1
			fi
			;;
		thread)
			_tids=$(lowlat_cpuset_tids "$_name")
			if [ -z "$_tids" ]; then
				echo "missing: kernel thread '$_name' is not in procstat -at"
				_bad=1
				continue
			fi
			for _tid in $_tids; do
				_now=$(lowlat_cpuset_get -t "$_tid")
				if [ "$_now" = "$_cpus" ]; then
					echo "ok: thread $_tid ($_name) on CPU $_cpus"
				else
					echo "drift: thread $_tid ($_name) on CPUs ${_now:-?}, planned $_cpus"
					_bad=1
				fi
			done
			;;
		esac
	done <<EOF
$PLAN
EOF
	if [ "$_bad" = 0 ]; then
		echo "lowlat_cpuset: every binding as planned."
	fi
	return $_bad
}

run_rc_command "$1"
