#!/usr/bin/env bash
# Runs the collection with real ansible-core against four hosts at once, each a local
# connection bound to a copy of a different fixture machine (lowlat_root), so the machine
# running it is not changed. Checks: the fact is gathered, a snapshot and an audit are
# fetched per host, and the bundle of a short `lowlat check` (of this machine: a check measures
# the live one) and a `bios` document read from a Redfish BMC (sushy-emulator, as
# tests/it/bios.rs runs it; without it the bios part is left out, unless CI=true: then that
# fails), where `lowlat fleet report` reads and shows them; check mode changes nothing and
# --diff shows a known value's before and after, apply then a second apply reports changed=0,
# verify passes, revert restores every copy byte for byte, and ansible-lint passes. One host's
# lowlat_profile is a site profile file on the controller extending another
# (lowlat_profile_files): both are copied to the host, and its audit and plan follow them.
#
# Usage: ansible/tests/run.sh LOWLAT_BINARY
set -euo pipefail
collection="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(dirname "$collection")"
bin="$(realpath "$1")"
work="$(mktemp -d)"
sushy_pid=""
trap '[ -z "$sushy_pid" ] || kill "$sushy_pid"; rm -rf "$work"' EXIT

mkdir -p "$work/collections/ansible_collections/lowlat"
ln -s "$collection" "$work/collections/ansible_collections/lowlat/lowlat"
export ANSIBLE_COLLECTIONS_PATH="$work/collections" ANSIBLE_HOME="$work/ansible-home" \
  ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 \
  ANSIBLE_STDOUT_CALLBACK=default

fail() { echo "ansible test: $*" >&2; exit 1; }

# The BMC the collect role reads BIOS settings from: sushy-emulator with its libvirt test
# driver on 127.0.0.1, HTTP basic authentication with the account of tests/fixtures/bmc/.
bmc_password=lowlat-test-secret
sushy="$(command -v sushy-emulator || echo /opt/lowlat-sushy/bin/sushy-emulator)"
bmc=""
if "$sushy" --help >/dev/null 2>&1; then
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  echo "SUSHY_EMULATOR_AUTH_FILE = '$repo/tests/fixtures/bmc/htpasswd'" >"$work/sushy.conf"
  "$sushy" --libvirt-uri test:///default -i 127.0.0.1 -p "$port" --config "$work/sushy.conf" \
    >"$work/sushy.log" 2>&1 &
  sushy_pid=$!
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && bmc="http://127.0.0.1:$port" && break
    kill -0 "$sushy_pid" 2>/dev/null || { cat "$work/sushy.log"; fail "sushy-emulator exited"; }
    sleep 0.1
  done
  [ -n "$bmc" ] || { cat "$work/sushy.log"; fail "sushy-emulator did not listen on $port"; }
elif [ "${CI:-}" = true ]; then
  fail "sushy-emulator (PyPI sushy-tools, see .ci/run) is missing"
else
  echo "ansible test: no sushy-emulator; the bios part is left out"
fi

fixtures=(epyc7f32-2s xeon-2s-smt milan64-nps4-smt rt-guest-4vcpu)
# The site profile of epyc7f32-2s, on the controller: site.toml extends base.toml.
mkdir -p "$work/profiles"
printf '%s\n' 'extends = "base.toml"' '[sysctl]' '"vm.stat_interval" = 10' >"$work/profiles/site.toml"
printf '%s\n' 'extends = "low-latency"' '[kernel]' 'remove = ["skew_tick"]' >"$work/profiles/base.toml"
mkdir -p "$work/host_vars"
printf '%s\n' "lowlat_profile: $work/profiles/site.toml" \
  "lowlat_profile_files: [$work/profiles/base.toml]" >"$work/host_vars/epyc7f32-2s.yml"
inventory="$work/hosts.ini"
{
  echo "[fleet]"
  for name in "${fixtures[@]}"; do
    host="$work/hosts/$name"
    mkdir -p "$host"
    cp -a "$repo/tests/fixtures/machines/$name" "$host/root"
    echo "$name ansible_connection=local ansible_python_interpreter=$(command -v python3)" \
      "lowlat_root=$host/root lowlat_bin=$host/bin/lowlat lowlat_facts_dir=$host/facts.d" \
      "lowlat_plan_dir=$host/plan lowlat_remote_dir=$host/staging lowlat_profile_dir=$host/profile"
  done
  echo "[fleet:vars]"
  echo "lowlat_binary_src=$bin"
  echo "lowlat_collect_dir=$work/collected"
  echo "lowlat_collect_check=true"
  echo "lowlat_check_duration=1s"
  if [ -n "$bmc" ]; then
    echo "lowlat_collect_bios=true"
    echo "lowlat_bmc=$bmc"
    echo "lowlat_bmc_user=admin"
    echo "lowlat_bmc_password=$bmc_password"
  fi
} >"$inventory"

# Runs a playbook and keeps its output in $work/last.log.
play() {
  ansible-playbook -i "$inventory" "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log"; fail "ansible-playbook $* failed"; }
}
# The PLAY RECAP's count `what` (changed, failed) for host `name`.
recap() {
  sed -n "s/^$1 *: .*\b$2=\([0-9]*\).*/\1/p" "$work/last.log"
}
untouched() {
  for name in "${fixtures[@]}"; do
    diff -r --no-dereference "$repo/tests/fixtures/machines/$name" "$work/hosts/$name/root" >/dev/null \
      || fail "$1: the copy of $name differs from the fixture"
  done
}

play "$collection/playbooks/install.yml"
for name in "${fixtures[@]}"; do
  python3 - "$work/hosts/$name/facts.d/lowlat.fact" "$repo/tests/fixtures/machines/$name" <<'PY' || fail "fact of $name"
import json, sys
fact = json.load(open(sys.argv[1]))
cpuinfo = open(sys.argv[2] + "/proc/cpuinfo").read()
assert fact["cpu_model"] and fact["cpu_model"] in cpuinfo, fact
assert fact["shape"]["cpus"] > 0, fact
PY
  grep -q "\"lowlat_version\"" "$work/hosts/$name/facts.d/lowlat.fact"
  [ -s "$work/collected/$name/$name.lowlat" ] || fail "no snapshot fetched for $name"
  "$bin" --snapshot "$work/collected/$name/$name.lowlat" inventory >/dev/null || fail "snapshot of $name unreadable"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kind"]=="audit", d["kind"]' \
    "$work/collected/$name/audit.json" || fail "no audit fetched for $name"
  for document in check measure-jitter measure-timer; do
    [ -s "$work/collected/$name/bundle/$document.json" ] || fail "no $document.json in the bundle fetched for $name"
  done
  if [ -n "$bmc" ]; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kind"]=="bios" and d["current"], d' \
      "$work/collected/$name/bios.json" || fail "no bios document fetched for $name"
  fi
done
! grep -qF "$bmc_password" "$work/last.log" || fail "the BMC password is in ansible-playbook's output"
# The site profile was copied to its host and audited against there.
python3 - "$work/collected/epyc7f32-2s/audit.json" "$work/hosts/epyc7f32-2s/profile" <<'PY' || fail "the audit of epyc7f32-2s did not read its site profile"
import json, sys
audit, copied = json.load(open(sys.argv[1])), sys.argv[2]
assert audit["profile"]["files"] == [copied + "/site.toml", copied + "/base.toml"], audit["profile"]
finding = next(f for f in audit["findings"] if f["rule"] == "LL-SYSCTL-VM-STAT-INTERVAL")
assert "10" in finding["expected"], finding
PY

# lowlat fleet report reads what was collected: four different machines, so four groups and no
# outlier; nothing skipped (each host's audit.json is passed over, and its bios.json read into
# its fingerprint: a document that cannot be read or belongs to no host is listed as skipped);
# each group shows the figures of its host's bundle.
"$bin" fleet report "$work/collected" --json >"$work/fleet.json" || fail "fleet report on the collected snapshots"
python3 - "$work/fleet.json" <<'PY' || fail "fleet report did not read the four collected hosts and their documents"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["hosts"], len(d["groups"]), d["skipped"]) == (4, 4, []), d
for group in d["groups"]:
    metrics = {m["metric"]: m["hosts"] for m in group["measurements"]}
    assert metrics.get("measure-timer max") == 1, (group["hosts"], metrics)
PY

play "$collection/playbooks/tune.yml" --check --diff
untouched "check mode"
# The plan of epyc7f32-2s follows both files, each setting naming its file and line.
python3 - "$work/hosts/epyc7f32-2s/plan/plan.json" "$work/hosts/epyc7f32-2s/profile" <<'PY' || fail "the plan of epyc7f32-2s did not follow its site profile"
import json, sys
plan, copied = json.load(open(sys.argv[1])), sys.argv[2]
settings = {s["id"]: s for s in plan["settings"]}
assert settings["sysctl:vm.stat_interval"]["value"] == "10", settings["sysctl:vm.stat_interval"]
skew = settings["cmdline:skew_tick"]
assert (skew["value"], skew["source"]) == ("", copied + "/base.toml:3"), skew
PY
for name in "${fixtures[@]}"; do
  [ "$(recap "$name" changed)" -gt 0 ] || fail "check mode reported nothing to change on $name"
done
# --diff: the lowlat_apply module's before/after of one knob, as the fixture has it and as the
# host's plan wants it.
python3 - "$work/last.log" "$work/hosts/epyc7f32-2s" "$repo/tests/fixtures/machines/epyc7f32-2s" <<'PY' || fail "--diff"
import json, sys
log, host, fixture = open(sys.argv[1]).read().splitlines(), sys.argv[2], sys.argv[3]
knob, sid = "/proc/sys/kernel/watchdog_cpumask", "sysctl:kernel.watchdog_cpumask"
before = open(fixture + knob).read().strip()
plan = json.load(open(host + "/plan/plan.json"))
after = next(s["value"] for s in plan["settings"] if s["id"] == sid)
assert before != after, (before, after)
header = "--- before: %s (%s)" % (knob, sid)
at = [i for i, line in enumerate(log) if line == header]
assert at, "no diff of %s in the output" % knob
# Some host's diff of that knob shows exactly this change.
assert any(log[i + 1] == "+++ after: %s (%s)" % (knob, sid) and "-" + before in log[i + 2:i + 5]
           and "+" + after in log[i + 2:i + 5] for i in at), [log[i:i + 6] for i in at]
PY

play "$collection/playbooks/tune.yml"
for name in "${fixtures[@]}"; do
  [ "$(recap "$name" changed)" -gt 0 ] || fail "apply changed nothing on $name"
  [ -s "$work/hosts/$name/root/var/lib/lowlat/journal.jsonl" ] || fail "no journal on $name"
  # The role verified (the play passed); verify again here: ok or pending a reboot.
  "$bin" --root "$work/hosts/$name/root" verify --plan "$work/hosts/$name/plan/plan.json" >/dev/null \
    || fail "verify after apply on $name"
done
grep -q 'TASK \[lowlat.lowlat.tune : Verify the machine against the plan\]' "$work/last.log" \
  || fail "the tune role did not verify"
play "$collection/playbooks/tune.yml"
for name in "${fixtures[@]}"; do
  [ "$(recap "$name" changed)" = 0 ] || fail "a second apply changed something on $name"
done

play "$collection/playbooks/revert.yml"
untouched "revert"
play "$collection/playbooks/revert.yml"
for name in "${fixtures[@]}"; do
  [ "$(recap "$name" changed)" = 0 ] || fail "a second revert changed something on $name"
done

(cd "$collection" && ansible-lint --offline >"$work/lint.log" 2>&1) || { cat "$work/lint.log"; fail "ansible-lint"; }
echo "ansible test: 4 hosts: installed, collected, check mode, apply, second apply changed=0, verify, revert: ok"
