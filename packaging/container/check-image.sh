#!/usr/bin/env bash
# Builds the image and runs it: inside a bare container lowlat says it is in one and what it
# cannot judge; with the host's /proc and /sys mounted under /host, `--root /host audit`
# judges this machine as lowlat does outside (the same findings).
#
# Usage: packaging/container/check-image.sh   (LOWLAT_BIN as for build.sh)
# Needs podman; here crun refuses the hybrid cgroup layout, so runc is used
# (PODMAN_RUNTIME, default runc) and /etc/containers/containers.conf has default_ulimits = [].
set -euo pipefail
cd "$(dirname "$0")/../.."

export PODMAN_RUNTIME="${PODMAN_RUNTIME:-runc}"
tag=localhost/lowlat:check
packaging/container/build.sh "$tag"
bin="${LOWLAT_BIN:-${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release/lowlat}"
run=(podman --runtime "$PODMAN_RUNTIME" run --rm --network none)
fail() { echo "check-image: $*" >&2; exit 1; }

# 1. A bare container: inventory runs, and says where it runs and what it cannot judge.
out="$("${run[@]}" "$tag" inventory 2>&1)" || fail "inventory in the container failed: $out"
grep -q "running in a container" <<<"$out" || fail "inventory did not say it runs in a container: $out"
grep -q -- "--root /host" <<<"$out" || fail "inventory did not say how to audit the node: $out"

# 2. The host's /proc and /sys mounted: the audit judges this machine. Its findings on
# rules that read only /proc and /sys match those of the binary run outside.
verdicts() { grep -E '^  (pass|FAIL|warn|unknown|skipped|inferred) ' | grep -E 'LL-(NOHZ-FULL|RCU-NOCBS|ISOLCPUS|IRQ-DEFAULT-AFFINITY|CLOCKSOURCE|THP)' | awk '{print $1, $2}'; }
inside="$("${run[@]}" -v /proc:/host/proc:ro -v /sys:/host/sys:ro "$tag" --root /host audit 2>&1 || true)"
outside="$("$bin" audit 2>/dev/null || true)"
[ -n "$(verdicts <<<"$inside")" ] || fail "no verdicts from the audit in the container: $inside"
diff <(verdicts <<<"$inside") <(verdicts <<<"$outside") || fail "the container's audit of the host differs from the host's own"
grep -q "running in a container" <<<"$inside" && fail "--root /host still said it judged the container"
podman rmi "$tag" >/dev/null
echo "check-image: ok ($tag: bare container noted; --root /host audits the host like lowlat outside)"
