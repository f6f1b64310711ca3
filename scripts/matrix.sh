#!/usr/bin/env bash
# The whole platform matrix (tests/tests/matrix.rs, docs/platforms.md): every row boots a short
# run under TCG (CPU models on the emulated PMU, no PIT / no HPET, x2APIC, 4-64 GiB, an IOMMU,
# BIOS and UEFI) and prints one table line; a row this QEMU cannot run is a SKIP with the
# reason. The test command runs a representative subset (`matrix_subset`). Then the UEFI boots
# with 4 and 8 CPUs under -icount (tests/tests/smp.rs), too slow for the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/provision.sh
baremark_provision
baremark_build
BAREMARK_QEMU_PMU="$(bash emulator/build.sh)"
export BAREMARK_QEMU_PMU
baremark_say "platform matrix: every row (a few minutes)"
cargo test -p baremark-tests --test matrix -- --ignored --nocapture matrix_full
baremark_say "every core under UEFI and -icount: 4 and 8 CPUs, a pinned payload exact on each"
cargo test -p baremark-tests --test smp -- --ignored --nocapture uefi_pinned_payloads_are_exact_on_4_and_8_cpus_under_icount
