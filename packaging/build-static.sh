#!/usr/bin/env bash
# Builds lowlat as one fully static executable (glibc linked in with +crt-static on the gnu
# target: no musl toolchain is needed), checks that it has no dynamic dependencies and that it
# runs, and generates what the packages install beside it: shell completions and man pages,
# from the binary's own clap definitions.
#
# Usage: packaging/build-static.sh
# Output (under $CARGO_TARGET_DIR, default target/):
#   x86_64-unknown-linux-gnu/release/lowlat                   the file to copy to hosts
#   x86_64-unknown-linux-gnu/release/generated/completions/   lowlat (bash), _lowlat (zsh), lowlat.fish
#   x86_64-unknown-linux-gnu/release/generated/man/           lowlat.1, lowlat-SUBCOMMAND.1, ...
# Then `cargo deb --no-build --target x86_64-unknown-linux-gnu` packs them into a .deb.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-gnu
# --target keeps RUSTFLAGS off build scripts and proc macros, which must stay dynamic.
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
  cargo build --release --locked --target "$target"

release="${CARGO_TARGET_DIR:-target}/$target/release"
bin="$release/lowlat"

# `file` says "statically linked" or "static-pie linked"; ldd must find nothing to load.
description="$(file -b "$bin")"
case "$description" in
  *"statically linked"* | *"static-pie linked"*) ;;
  *) echo "build-static: $bin is not static: $description" >&2; exit 1 ;;
esac
# ldd says "statically linked" (static-pie) or "not a dynamic executable"; anything else is a
# list of libraries the binary would load.
ldd_out="$(ldd "$bin" 2>&1 || true)"
case "$ldd_out" in
  *"statically linked"* | *"not a dynamic executable"*) ;;
  *) echo "build-static: ldd lists dynamic dependencies of $bin:" >&2; echo "$ldd_out" >&2; exit 1 ;;
esac
"$bin" --root tests/fixtures/machines/epyc7f32-2s inventory >/dev/null

generated="$release/generated"
rm -rf "$generated"
mkdir -p "$generated/completions"
"$bin" completions bash >"$generated/completions/lowlat"
"$bin" completions zsh >"$generated/completions/_lowlat"
"$bin" completions fish >"$generated/completions/lowlat.fish"
"$bin" man --out "$generated/man" >/dev/null

echo "build-static: $bin ($description)"
