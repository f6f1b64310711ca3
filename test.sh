#!/usr/bin/env bash
# The test command: lints, host unit tests, and the QEMU integration tests (BIOS and UEFI boots
# under TCG, negative tests, kvm-unit-tests and baremark on the emulated PMU). Provisions the
# toolchain, QEMU and OVMF, and builds the emulator, first.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/provision.sh
baremark_provision
baremark_build

baremark_say "lint: rustfmt"
cargo fmt --all -- --check
baremark_say "lint: clippy (bare-metal kernel crates)"
cargo clippy --quiet -p baremark-kernel -p baremark-hw -p baremark-screen -p events -p baremark-sdk -p baremark-payload-hello -p baremark-payload-loop -p baremark-payload-rdpmc -p baremark-payload-spin -p baremark-payload-spawn -p baremark-payload-suite -p baremark-payload-zoo -p baremark-payload-example -p baremark-payload-asm -p baremark-payload-fuzz -p baremark-payload-profile -p baremark-payload-cores \
    --no-default-features --target x86_64-unknown-none -- -D warnings
baremark_say "lint: clippy (host crates and tests)"
cargo clippy --quiet --workspace --all-targets -- -D warnings
# The QEMU tests on the emulated PMU need QEMU built with baremark's PMU model: built here, once,
# with its progress shown, and cached outside the clone (docs/emulated-pmu.md).
baremark_say "emulator: QEMU with the emulated PMU (emulator/build.sh; built on first use, then cached)"
BAREMARK_QEMU_PMU="$(bash emulator/build.sh)"
export BAREMARK_QEMU_PMU
baremark_say "tests: host unit tests and QEMU integration tests"
cargo test --workspace
