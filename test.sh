#!/usr/bin/env bash
# The test command: lints, host unit tests, and the QEMU integration tests (BIOS and UEFI boots
# under TCG, negative tests). Provisions the toolchain, QEMU and OVMF first.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/provision.sh
baremark_provision
baremark_build

baremark_say "lint: rustfmt"
cargo fmt --all -- --check
baremark_say "lint: clippy (bare-metal kernel crates)"
cargo clippy --quiet -p baremark-kernel -p baremark-hw -p events -p baremark-sdk -p baremark-payload-hello -p baremark-payload-loop -p baremark-payload-rdpmc -p baremark-payload-spin -p baremark-payload-spawn -p baremark-payload-suite -p baremark-payload-example \
    --no-default-features --target x86_64-unknown-none -- -D warnings
baremark_say "lint: clippy (host crates and tests)"
cargo clippy --quiet --workspace --all-targets -- -D warnings
baremark_say "tests: host unit tests and QEMU integration tests"
cargo test --workspace
