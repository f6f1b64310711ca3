#!/usr/bin/env bash
# Builds QEMU with baremark's emulated PMU (the patch series in emulator/patches) and caches
# it outside the clone, keyed by the patches, this script and the Debian source version:
#
#   ${BAREMARK_CACHE:-~/.cache/baremark}/qemu-pmu-<key>/qemu-system-x86_64
#
# Prints that path on stdout; progress goes to stderr. A cached build is reused at once.
# The source is Debian's own package of QEMU 7.2 (apt-get source), with Debian's patches;
# firmware comes from the installed qemu-system-x86 / seabios packages. Needs apt-get and
# root (or password-less sudo) the first time, to add a deb-src entry and install the
# build dependencies. See docs/emulated-pmu.md.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
say() { printf 'baremark emulator: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# The Debian source version the patches were made against; another 7.2 version is tried
# when the archive no longer has it (the key then changes and the build says so).
PINNED_VERSION="1:7.2+dfsg-7+deb12u18"
BUILD_DEPS=(dpkg-dev ninja-build meson libglib2.0-dev libpixman-1-dev libfdt-dev flex bison
    gcc make python3 pkg-config qemu-system-x86 seabios)

# Only the devices baremark's runs and kvm-unit-tests use: a third of QEMU's build steps.
DEVICES='CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_ISA_DEBUG=y
CONFIG_VGA_PCI=y
CONFIG_PARALLEL=y'
CONFIGURE_FLAGS=(--target-list=x86_64-softmmu --without-default-devices
    --with-devices-x86_64=baremark --disable-docs --disable-werror --disable-tools
    --disable-guest-agent --disable-gtk --disable-sdl --disable-vnc --disable-spice
    --disable-opengl --disable-virglrenderer --disable-libusb --disable-slirp
    --disable-install-blobs --firmwarepath=/usr/share/qemu:/usr/share/seabios)

# Bump when the build steps below change what is built (the key covers the patches, the
# source version, the devices and the configure flags by themselves).
RECIPE=1

cache_root="${BAREMARK_CACHE:-$HOME/.cache/baremark}"

sudo_cmd() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo "$@"
    else
        die "needs root to run: $* (run this script as root once, or install those packages)"
    fi
}

key_of() {
    local version="$1"
    {
        printf '%s\n' "$RECIPE" "$version" "$DEVICES" "${CONFIGURE_FLAGS[*]}"
        cat "$here"/patches/*.patch
    } | sha256sum | cut -c1-16
}

# A deb-src entry for the suites that debian.sources names (Debian 12 deb822 layout).
ensure_deb_src() {
    if grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ || grep -qs '^deb-src' /etc/apt/sources.list; then
        return
    fi
    [ -f /etc/apt/sources.list.d/debian.sources ] ||
        die "no deb-src entry and no /etc/apt/sources.list.d/debian.sources to derive one from: add a deb-src line for QEMU's source package"
    say "adding a deb-src entry (/etc/apt/sources.list.d/baremark-src.sources) for QEMU's source package"
    sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
        awk 'BEGIN { RS = ""; ORS = "\n\n" } /Types: deb-src/ && !/security/' |
        sudo_cmd tee /etc/apt/sources.list.d/baremark-src.sources >/dev/null
    sudo_cmd apt-get update -qq
}

ensure_build_deps() {
    local missing=() p
    for p in "${BUILD_DEPS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        say "installing build dependencies with apt-get: ${missing[*]}"
        sudo_cmd apt-get update -qq
        sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
}

source_version() {
    # the candidate source version of qemu, e.g. 1:7.2+dfsg-7+deb12u18
    apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ { print $2 }' | sort -V | tail -1
}

main() {
    local version key dir bin
    command -v apt-get >/dev/null 2>&1 ||
        die "this script builds from Debian's QEMU source package and needs apt-get (Debian 12); elsewhere apply emulator/patches to QEMU 7.2 yourself and set BAREMARK_QEMU_PMU"

    # Fast path: a build for the pinned version (or the last one built) is already there.
    for version in "$PINNED_VERSION" "$(cat "$cache_root/qemu-pmu-last-version" 2>/dev/null || true)"; do
        [ -n "$version" ] || continue
        key="$(key_of "$version")"
        bin="$cache_root/qemu-pmu-$key/qemu-system-x86_64"
        if [ -x "$bin" ]; then
            printf '%s\n' "$bin"
            return
        fi
    done

    # One build at a time (tests start several runs at once); the others wait and reuse it.
    mkdir -p "$cache_root"
    exec 9>"$cache_root/qemu-pmu.lock"
    if ! flock -n 9; then
        say "another build of the emulator is running; waiting for it"
        flock 9
    fi
    for version in "$PINNED_VERSION" "$(cat "$cache_root/qemu-pmu-last-version" 2>/dev/null || true)"; do
        [ -n "$version" ] || continue
        bin="$cache_root/qemu-pmu-$(key_of "$version")/qemu-system-x86_64"
        if [ -x "$bin" ]; then
            printf '%s\n' "$bin"
            return
        fi
    done

    # Work directories of builds that were killed (we hold the lock: none is running).
    rm -rf "$cache_root"/build.*

    ensure_deb_src
    ensure_build_deps
    if apt-cache showsrc qemu 2>/dev/null | grep -qx "Version: $PINNED_VERSION"; then
        version="$PINNED_VERSION"
    else
        version="$(source_version)"
        [ -n "$version" ] || die "apt-get knows no source package for qemu (is a deb-src entry configured?)"
        case "$version" in
            *:7.2*) say "the pinned source $PINNED_VERSION is gone from the archive; trying $version" ;;
            *) die "the archive offers QEMU $version; the patches are for QEMU 7.2" ;;
        esac
    fi
    key="$(key_of "$version")"
    dir="$cache_root/qemu-pmu-$key"
    bin="$dir/qemu-system-x86_64"
    if [ -x "$bin" ]; then
        printf '%s\n' "$bin"
        return
    fi

    local start
    start=$(date +%s)
    mkdir -p "$cache_root"
    # global: the EXIT trap runs after main has returned
    work="$(mktemp -d "$cache_root/build.XXXXXX")"
    trap 'rm -rf "${work:-}"' EXIT
    say "building QEMU $version with the emulated PMU (first use only; about 3 minutes on 2 cores, 10 with the download and dependencies)"
    say "work directory $work; cache $dir"

    # (apt warns that it downloads as root when the cache is under /root: harmless)
    (cd "$work" && apt-get source -qq --download-only "qemu=$version" 2>&1 | grep -v 'unsandboxed as root' >&2
        exit "${PIPESTATUS[0]}") ||
        die "apt-get source qemu=$version failed"
    (cd "$work" && dpkg-source -x --no-check ./qemu_*.dsc src >/dev/null) ||
        die "unpacking the source package failed"
    local src="$work/src"

    # The Debian tarball has no edk2 firmware blobs: do not try to unpack them.
    sed -i 's/^    unpack_edk2_blobs = bzip2.found()/    unpack_edk2_blobs = false/' "$src/meson.build"
    grep -q '^    unpack_edk2_blobs = false' "$src/meson.build" ||
        die "meson.build changed: cannot turn off unpacking the edk2 blobs"
    printf '# baremark: only what its runs and kvm-unit-tests use\n%s\n' "$DEVICES" \
        >"$src/configs/devices/x86_64-softmmu/baremark.mak"

    local p
    for p in "$here"/patches/*.patch; do
        say "applying $(basename "$p")"
        patch -d "$src" -p1 -s --no-backup-if-mismatch <"$p" || die "$(basename "$p") does not apply to $version"
    done

    say "configuring"
    mkdir -p "$src/build"
    (cd "$src/build" && ../configure "${CONFIGURE_FLAGS[@]}" >"$work/configure.log" 2>&1) || {
        tail -30 "$work/configure.log" >&2
        die "configure failed (log above)"
    }
    say "compiling (ninja; progress every 10%)"
    if ! (cd "$src/build" && ninja qemu-system-x86_64 2>&1 | tee "$work/ninja.log" |
        awk -F'[][/]' '/^\[[0-9]+\/[0-9]+\]/ { n = $2; t = $3; pct = int(100 * n / t);
            if (pct >= next_pct) { printf "baremark emulator:   %d%% (%d/%d)\n", pct, n, t > "/dev/stderr"; next_pct = pct - pct % 10 + 10 } }'
        exit "${PIPESTATUS[0]}"); then
        grep -B2 -A20 -m1 'FAILED\|error:' "$work/ninja.log" >&2 || tail -30 "$work/ninja.log" >&2
        die "the QEMU build failed (log above)"
    fi

    mkdir -p "$dir.tmp"
    cp "$src/build/qemu-system-x86_64" "$dir.tmp/"
    strip "$dir.tmp/qemu-system-x86_64"
    printf '%s\n' "$version" >"$dir.tmp/debian-version"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    printf '%s\n' "$version" >"$cache_root/qemu-pmu-last-version"
    say "built in $(( $(date +%s) - start )) s: $bin"
    printf '%s\n' "$bin"
}

main "$@"
