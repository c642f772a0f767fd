#!/usr/bin/env bash
# Packs the static binary, completions and man pages that packaging/build-static.sh made into a
# .deb with cargo-deb, installs it with dpkg -i, checks that every file is where Debian looks for
# it and that the installed lowlat runs, then removes the package. Needs root (dpkg).
#
# Usage: packaging/build-static.sh && packaging/check-deb.sh
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
deb="$(cargo deb --no-build --target "$target" | tail -n 1)"
echo "check-deb: $deb"
dpkg -i "$deb"
trap 'dpkg --purge lowlat >/dev/null' EXIT
for file in /usr/bin/lowlat \
  /usr/share/bash-completion/completions/lowlat \
  /usr/share/zsh/vendor-completions/_lowlat \
  /usr/share/fish/vendor_completions.d/lowlat.fish \
  /usr/share/man/man1/lowlat.1 \
  /usr/share/man/man1/lowlat-measure-jitter.1; do
  [ -s "$file" ] || { echo "check-deb: $file is missing or empty after dpkg -i" >&2; exit 1; }
done
/usr/bin/lowlat --root tests/fixtures/machines/epyc7f32-2s inventory | grep -q 'AMD EPYC 7F32'
echo "check-deb: installed, ran and removed lowlat from $deb"
