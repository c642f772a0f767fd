# shellcheck shell=bash
# Shared by the bench/ scripts: every timed run's exit status is checked (a crashing binary
# must not read as a speed-up), and each script ends with the exit status of its targets.
#   0  every target met;  1  a target missed;  2  a run exited with a status it must not have.
# Source it: `. "$(dirname "$0")/lib.sh"`.

bench_missed=0

# bench_exit_ok "ALLOWED" STATUS WHAT: exits 2 unless STATUS is one of the space-separated
# ALLOWED statuses ("any": a peer whose status does not matter).
bench_exit_ok() {
  case " $1 " in
    " any "|*" $2 "*) ;;
    *) echo "bench: $3 exited $2 (allowed: $1); no timing of it is valid" >&2; exit 2 ;;
  esac
}

# bench_run "ALLOWED" CMD...: runs CMD once, output discarded, and checks its status.
bench_run() {
  local allowed=$1; shift
  local status=0
  "$@" >/dev/null 2>&1 || status=$?
  bench_exit_ok "$allowed" "$status" "$*"
}

# bench_do "ALLOWED" CMD...: runs CMD with the caller's redirections (its output kept) and
# checks its status: for runs whose output the script reads.
bench_do() {
  local allowed=$1; shift
  local status=0
  "$@" || status=$?
  bench_exit_ok "$allowed" "$status" "$*"
}

# bench_hyperfine_codes "ALLOWED" FILE: checks every run's exit code in a hyperfine JSON export.
bench_hyperfine_codes() {
  local codes
  codes=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(" ".join(sorted({str(c) for c in r.get("exit_codes") or [None]})))' "$2")
  local code
  for code in $codes; do
    bench_exit_ok "$1" "$code" "a timed run ($2)"
  done
}

# bench_target WHAT VALUE LIMIT: VALUE must be below LIMIT (same unit); says so and records a
# miss.
bench_target() {
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$2" "$3"; then
    echo "bench: target met: $1 $2 < $3"
  else
    echo "bench: TARGET MISSED: $1 $2, not below $3" >&2
    bench_missed=1
  fi
}

# bench_at_most WHAT VALUE LIMIT: VALUE must be LIMIT or less (a difference "within 1 µs").
bench_at_most() {
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$2" "$3"; then
    echo "bench: target met: $1 $2 <= $3"
  else
    echo "bench: TARGET MISSED: $1 $2, above $3" >&2
    bench_missed=1
  fi
}

# bench_at_least WHAT VALUE LIMIT: VALUE must be LIMIT or more (a rate, a ratio to a peer).
bench_at_least() {
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$2" "$3"; then
    echo "bench: target met: $1 $2 >= $3"
  else
    echo "bench: TARGET MISSED: $1 $2, below $3" >&2
    bench_missed=1
  fi
}

# bench_targets FILE: judges the targets a script's analysis wrote, one a line:
# `below<TAB>WHAT<TAB>VALUE<TAB>LIMIT`, `at-most<TAB>…` or `at-least<TAB>…`. A file without
# a line is a miss: the analysis found nothing to judge.
bench_targets() {
  local kind what value limit judged=0
  while IFS=$'\t' read -r kind what value limit; do
    case $kind in
      below) bench_target "$what" "$value" "$limit" ;;
      at-least) bench_at_least "$what" "$value" "$limit" ;;
      at-most) bench_at_most "$what" "$value" "$limit" ;;
      *) echo "bench: $1: not a target line: $kind" >&2; exit 2 ;;
    esac
    judged=1
  done < "$1"
  if [ "$judged" = 0 ]; then
    echo "bench: TARGET MISSED: no figure to judge in $1" >&2
    bench_missed=1
  fi
}

# bench_end: the script's exit status (1 when a target was missed).
bench_end() {
  exit "$bench_missed"
}
