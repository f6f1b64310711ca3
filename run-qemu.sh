#!/usr/bin/env bash
# Boot baremark in QEMU and print its report. Arguments go to `baremark run`
# (see `./run-qemu.sh --help`): e.g. --uefi, --accel tcg, --log serial.log, --icount 0.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/provision.sh
baremark_provision
baremark_build
exec target/debug/baremark run "$@"
