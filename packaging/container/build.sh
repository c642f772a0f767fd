#!/usr/bin/env bash
# Builds the lowlat image (packaging/container/Containerfile: FROM scratch, the static binary)
# with podman, or with docker where there is no podman.
#
# Usage: packaging/container/build.sh [TAG]        (default localhost/lowlat:latest)
#   LOWLAT_BIN=PATH   the static binary to put in it (default: the release build of
#                     packaging/build-static.sh); it must be static: a FROM scratch image has
#                     no dynamic loader.
#   PODMAN_RUNTIME=runc  passed as --runtime to podman (where crun refuses the host's cgroups).
set -euo pipefail
cd "$(dirname "$0")/../.."

tag="${1:-localhost/lowlat:latest}"
bin="${LOWLAT_BIN:-${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release/lowlat}"
if [ ! -x "$bin" ]; then
  echo "container/build: no binary at $bin; run packaging/build-static.sh, or set LOWLAT_BIN" >&2
  exit 2
fi
case "$(file -b "$bin")" in
  *"statically linked"* | *"static-pie linked"*) ;;
  *) echo "container/build: $bin is not static ($(file -b "$bin")); a FROM scratch image cannot run it" >&2; exit 2 ;;
esac

engine=(podman)
command -v podman >/dev/null || engine=(docker)
if [ "${engine[0]}" = podman ] && [ -n "${PODMAN_RUNTIME:-}" ]; then
  engine+=(--runtime "$PODMAN_RUNTIME")
fi

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
cp "$bin" "$context/lowlat"
cp packaging/container/Containerfile "$context/Containerfile"
"${engine[@]}" build --quiet -f "$context/Containerfile" -t "$tag" "$context" >/dev/null
echo "container/build: $tag ($(du -h "$bin" | cut -f1) binary)"
