#!/usr/bin/env bash
# baremark in CI: builds your payloads, runs them on baremark's emulated PMU (exact counts, the
# same on every run) and gates them with your expectations file and/or a baseline. For any CI
# on a stock Debian 12 machine or container (the emulated PMU is built from Debian 12's
# bookworm-backports source: on Ubuntu runners use a debian:12 container, as
# examples/ci/github-workflow.yml does, which calls this script). The user guide's
# section 14 and docs/expectations.md walk through it.
#
#   BAREMARK_DIR=path/to/baremark baremark-ci.sh --payloads DIR [--expect FILE]
#       [--baseline NAME] [--save-baseline NAME] [--baseline-dir DIR] [--out DIR]
#       [-- more `baremark run` arguments, e.g. --events instructions,branches --reps 10]
#
# DIR is a cargo package of payload binaries (the user guide's section 2 makes one); every
# binary it builds for x86_64-unknown-none is run. Writes to --out (default baremark-out):
# serial.log, results.json, junit.xml, summary.md (also appended to $GITHUB_STEP_SUMMARY when it
# is set). Exit status: baremark's (0 all passed, 6 a check failed, 1 the kernel failed, 2 a setup
# error; docs/expectations.md).
#
# What it does, in order (each step says so on stderr):
#   1. provisions: the Rust toolchain baremark pins (rustup), QEMU, OVMF and xmllint (apt-get;
#      as root or with password-less sudo), and QEMU with the emulated PMU, built once and cached
#      in ~/.cache/baremark (set BAREMARK_QEMU_PMU to use one you have);
#   2. builds the baremark tool and your payloads (release, for x86_64-unknown-none);
#   3. runs them: baremark run --pmu emulated --payload ... --expect ... --junit ... --markdown ...
set -euo pipefail

say() { printf 'baremark-ci: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BAREMARK_DIR="$(cd "${BAREMARK_DIR:-$here/../..}" && pwd)"
payloads="" expect="" baseline="" save_baseline="" baseline_dir="" out="baremark-out"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --payloads) payloads="${2:?--payloads DIR}"; shift 2 ;;
        --expect) expect="${2:?--expect FILE}"; shift 2 ;;
        --baseline) baseline="${2:?--baseline NAME}"; shift 2 ;;
        --save-baseline) save_baseline="${2:?--save-baseline NAME}"; shift 2 ;;
        --baseline-dir) baseline_dir="${2:?--baseline-dir DIR}"; shift 2 ;;
        --out) out="${2:?--out DIR}"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ -n "$payloads" ] || die "give --payloads DIR (a cargo package of payload binaries)"
[ -f "$payloads/Cargo.toml" ] || die "--payloads $payloads: no Cargo.toml there"
[ -n "$expect$baseline$save_baseline" ] || die "give --expect FILE, --baseline NAME or --save-baseline NAME: there is nothing to gate"
[ -z "$expect" ] || [ -f "$expect" ] || die "--expect $expect: no such file"
[ -f "$BAREMARK_DIR/scripts/provision.sh" ] || die "BAREMARK_DIR=$BAREMARK_DIR is not a baremark checkout"

abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
payloads="$(cd "$payloads" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -z "$expect" ] || expect="$(abs "$expect")"
[ -z "$baseline_dir" ] || baseline_dir="$(mkdir -p "$baseline_dir" && cd "$baseline_dir" && pwd)"

say "1/3 provisioning (toolchain, QEMU, OVMF, xmllint; the emulated PMU's QEMU)"
# shellcheck source=/dev/null
source "$BAREMARK_DIR/scripts/provision.sh"
baremark_provision
if [ -z "${BAREMARK_QEMU_PMU:-}" ]; then
    BAREMARK_QEMU_PMU="$(bash "$BAREMARK_DIR/emulator/build.sh")"
fi
export BAREMARK_QEMU_PMU
say "    emulated PMU: $BAREMARK_QEMU_PMU"

# Your payloads build with the toolchain baremark pins (its rust-toolchain.toml).
toolchain="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$BAREMARK_DIR/rust-toolchain.toml")"
say "2/3 building the baremark tool and your payloads ($payloads, toolchain $toolchain)"
tool="$(cd "$BAREMARK_DIR" && cargo build -q -p baremark --bin baremark --message-format=json-render-diagnostics |
    sed -n 's/.*"executable":"\([^"]*\/baremark\)".*/\1/p' | tail -1)"
[ -x "$tool" ] || die "building the baremark tool failed"
mapfile -t elves < <(cd "$payloads" && RUSTUP_TOOLCHAIN="$toolchain" cargo build -q --release \
    --target x86_64-unknown-none --message-format=json-render-diagnostics |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p')
[ "${#elves[@]}" -gt 0 ] || die "$payloads built no payload binary for x86_64-unknown-none"
args=()
for elf in "${elves[@]}"; do
    say "    payload: $elf"
    args+=(--payload "$elf")
done

say "3/3 running them on the emulated PMU and checking them"
gate=(--junit "$out/junit.xml" --markdown "$out/summary.md")
[ -z "$expect" ] || gate+=(--expect "$expect")
[ -z "$baseline" ] || gate+=(--baseline "$baseline")
[ -z "$save_baseline" ] || gate+=(--save-baseline "$save_baseline")
[ -z "$baseline_dir" ] || gate+=(--baseline-dir "$baseline_dir")
status=0
"$tool" run --pmu emulated "${args[@]}" --log "$out/serial.log" --json "$out/results.json" \
    "${gate[@]}" "${extra[@]}" || status=$?
case "$status" in
    0) say "passed (files in $out)" ;;
    6) say "a check FAILED (see above; $out/junit.xml, $out/summary.md)" ;;
    *) say "baremark exited with status $status (docs/expectations.md: exit statuses)" ;;
esac
exit "$status"
