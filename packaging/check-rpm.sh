#!/usr/bin/env bash
# Packs what packaging/build-static.sh made into an .rpm with cargo-generate-rpm, checks with
# rpm that it lists every file, and runs the binary unpacked from it (rpm2archive) on a fixture.
# Nothing is installed: this Debian machine does not manage its packages with rpm.
#
# Usage: packaging/build-static.sh && packaging/check-rpm.sh
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
out="${CARGO_TARGET_DIR:-target}/$target/generate-rpm"
rm -rf "$out"
cargo generate-rpm --target "$target"
rpm_file="$(ls "$out"/lowlat-*.rpm)"
listing="$(rpm -qlp "$rpm_file")"
for file in /usr/bin/lowlat \
  /usr/share/bash-completion/completions/lowlat \
  /usr/share/zsh/site-functions/_lowlat \
  /usr/share/fish/vendor_completions.d/lowlat.fish \
  /usr/share/man/man1/lowlat.1 \
  /usr/share/man/man1/lowlat-measure-jitter.1; do
  grep -qx "$file" <<<"$listing" || { echo "check-rpm: $rpm_file lacks $file" >&2; exit 1; }
done
unpacked="$(mktemp -d)"
trap 'rm -rf "$unpacked"' EXIT
rpm2archive -n <"$rpm_file" | tar -x -C "$unpacked"
"$unpacked/usr/bin/lowlat" --root tests/fixtures/machines/epyc7f32-2s inventory | grep -q 'AMD EPYC 7F32'
echo "check-rpm: $rpm_file lists every file, and its lowlat runs"
