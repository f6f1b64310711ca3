#!/usr/bin/env bash
# Builds QEMU with baremark's emulated PMU (the patch series in emulator/patches) and caches
# it outside the clone, keyed by the patches, this script and the Debian source version:
#
#   ${BAREMARK_CACHE:-~/.cache/baremark}/qemu-pmu-<key>/qemu-system-x86_64
#
# Prints that path on stdout; progress goes to stderr. A cached build is reused at once.
# The source is Debian's own package of QEMU 10.0 from Debian 12's bookworm-backports suite
# (apt-get source); firmware comes from the installed qemu-system-x86 / seabios packages.
# Needs apt-get and root (or password-less sudo) the first time, to add a bookworm-backports
# sources entry and install the build dependencies. See docs/emulated-pmu.md.
#
#   emulator/build.sh --backports-entry   only adds the bookworm-backports entry (for
#                                         scripts/provision.sh, which installs QEMU 10 from it)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
say() { printf 'baremark emulator: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# The Debian source version the patches were made against (bookworm-backports); another
# 10.0.x version is tried when the archive no longer has it (the key then changes and the
# build says so).
PINNED_VERSION="1:10.0.2+ds-2+deb13u1~bpo12+1"
SUITE=bookworm-backports
# Build tools from bookworm; QEMU's configure needs meson >= 1.5 (bookworm has 1.0.1) and
# brings its own in a build-local venv from the wheels below (python3-venv, pip).
BUILD_DEPS=(dpkg-dev ninja-build libglib2.0-dev libpixman-1-dev libfdt-dev flex bison
    gcc make python3 python3-venv python3-pip pkg-config)
# The firmware the binary loads (--firmwarepath): that of Debian's QEMU 10 packages, from
# bookworm-backports. QEMU 10 needs SeaBIOS 1.16.3 or later (Debian's qemu-system-x86 10.0
# depends on it): with bookworm's 1.16.2 a BIOS boot stalls 30 s under TCG and never ends
# under -icount.
FIRMWARE_DEPS=(qemu-system-x86 seabios)
MIN_SEABIOS=1.16.3
# Debian's "+ds" tarball drops QEMU's python/wheels; these are the versions QEMU 10.0
# bundles there (pythondeps.toml), fetched with pip and installed by configure offline.
WHEELS=(meson==1.5.0 pycotap==1.3.1)

# Only the devices baremark's runs, its tests and kvm-unit-tests use: Q35 (with its ICH9
# LPC, AHCI, HPET and ACPI PM timer), i440FX, isa-debug-exit, the VGA card, a parallel
# port, the Intel IOMMU (intel-iommu), and qemu-xhci with usb-storage sticks.
DEVICES='CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_HPET=y
CONFIG_VTD=y
CONFIG_ISA_DEBUG=y
CONFIG_VGA_PCI=y
CONFIG_PARALLEL=y
CONFIG_USB_XHCI_PCI=y
CONFIG_USB_STORAGE_CLASSIC=y'
CONFIGURE_FLAGS=(--target-list=x86_64-softmmu --without-default-devices
    --with-devices-x86_64=baremark --disable-docs --disable-werror --disable-tools
    --disable-guest-agent --disable-gtk --disable-sdl --disable-vnc --disable-spice
    --disable-opengl --disable-virglrenderer --disable-libusb --disable-slirp
    --disable-install-blobs --disable-download --python=/usr/bin/python3
    --firmwarepath=/usr/share/qemu:/usr/share/seabios)

# Bump when the build steps below change what is built (the key covers the patches, the
# source, the devices, the wheels and the configure flags by themselves).
RECIPE=2

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

# The key of a source: a Debian version, or "<version> (upstream tarball)" when the
# archive had only the .orig tarball of it (below).
key_of() {
    local source="$1"
    {
        printf '%s\n' "$RECIPE" "$source" "$DEVICES" "${CONFIGURE_FLAGS[*]}" "${WHEELS[*]}"
        cat "$here"/patches/*.patch
    } | sha256sum | cut -c1-16
}

# Whether apt has a deb (binary) and a deb-src entry for Debian 12's bookworm-backports.
have_backports_entry() {
    local types
    for types in deb deb-src; do
        grep -rqsE "^$types .*[[:space:]]$SUITE([[:space:]]|\$)" /etc/apt/sources.list /etc/apt/sources.list.d/*.list ||
            awk -v t="$types" -v s="$SUITE" 'BEGIN { RS = ""; found = 0 }
                { ty = 0; su = 0; n = split($0, l, "\n")
                  for (i = 1; i <= n; i++) {
                      if (l[i] ~ "^Types:" && (" " l[i] " ") ~ (" " t " ")) ty = 1
                      if (l[i] ~ "^Suites:" && (" " l[i] " ") ~ (" " s " ")) su = 1
                  }
                  if (ty && su) found = 1 }
                END { exit !found }' /etc/apt/sources.list.d/*.sources 2>/dev/null ||
            return 1
    done
}

# A sources entry for bookworm-backports, binaries and sources, derived from the main entry
# of debian.sources (Debian 12 deb822 layout): QEMU 10.0's source package and binaries.
# Backports are never installed unless asked for by name (-t bookworm-backports).
ensure_backports_entry() {
    have_backports_entry && return
    [ -f /etc/apt/sources.list.d/debian.sources ] ||
        die "no $SUITE entry and no /etc/apt/sources.list.d/debian.sources to derive one from: add 'deb' and 'deb-src' lines for $SUITE"
    say "adding a $SUITE sources entry (deb and deb-src, /etc/apt/sources.list.d/baremark-backports.sources): QEMU 10 comes from there; nothing is installed from it unless named"
    sed -e 's/^Types: .*/Types: deb deb-src/' -e "s/^Suites: .*/Suites: $SUITE/" \
        /etc/apt/sources.list.d/debian.sources |
        awk 'BEGIN { RS = ""; ORS = "\n\n" } !/security/ && !seen++' |
        sudo_cmd tee /etc/apt/sources.list.d/baremark-backports.sources >/dev/null
    sudo_cmd apt-get update -qq
}

missing_packages() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
    done
}

ensure_build_deps() {
    local missing
    mapfile -t missing < <(missing_packages "${BUILD_DEPS[@]}")
    if [ "${#missing[@]}" -gt 0 ]; then
        say "installing build dependencies with apt-get: ${missing[*]}"
        sudo_cmd apt-get update -qq
        sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
}

# Whether the installed firmware packages are QEMU 10's (SeaBIOS new enough).
firmware_ok() {
    local seabios
    [ -z "$(missing_packages "${FIRMWARE_DEPS[@]}")" ] || return 1
    seabios="$(dpkg-query -W -f='${Version}' seabios 2>/dev/null)"
    dpkg --compare-versions "$seabios" ge "$MIN_SEABIOS"
}

# Installs QEMU 10 and its firmware from bookworm-backports when the installed firmware is
# older (the same packages scripts/provision.sh installs for plain TCG runs).
ensure_firmware() {
    firmware_ok && return
    ensure_backports_entry
    say "the emulator loads the firmware of Debian's QEMU 10 (SeaBIOS $MIN_SEABIOS or later; installed: $(dpkg-query -W -f='${Version}' seabios 2>/dev/null || echo none)): installing ${FIRMWARE_DEPS[*]} from $SUITE with apt-get"
    sudo_cmd apt-get update -qq
    sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t "$SUITE" "${FIRMWARE_DEPS[@]}" >&2
    firmware_ok || die "the firmware packages are still too old after installing them from $SUITE"
}

# The source versions of qemu 10.0.x that apt knows, newest first.
source_versions_10_0() {
    apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/ { print $2 }' | grep -E '^([0-9]+:)?10\.0\.' | sort -rV | uniq
}

# The SHA-256 that the archive's index gives for file $2 of source version $1.
source_file_sha256() {
    apt-cache showsrc qemu 2>/dev/null | awk -v v="$1" -v f="$2" '
        /^Package:/ { inv = 0 } /^Version:/ { inv = ($2 == v) }
        /^[A-Za-z0-9-]+:/ { insha = ($1 == "Checksums-Sha256:") ; next }
        inv && insha && $3 == f { print $1; exit }'
}

# Downloads and unpacks source version $1 into $work/src; prints the source's name for the
# key: the version, or "<version> (upstream tarball)" when the archive serves the .orig
# tarball but not the .dsc and Debian's patches (a partial mirror): the tarball, checked
# against the index, is QEMU's release as Debian repacked it, and Debian's patches touch
# nothing this build uses (packaging, other targets, the microvm default, docs).
fetch_source() {
    local version="$1" upstream orig sum
    rm -rf "$work/dl" && mkdir -p "$work/dl"
    # (apt warns that it downloads as root when the cache is under /root: harmless)
    if (cd "$work/dl" && apt-get source -qq --download-only "qemu=$version" 2>&1 | grep -v 'unsandboxed as root' >&2
        exit "${PIPESTATUS[0]}"); then
        (cd "$work/dl" && dpkg-source -x --no-check ./qemu_*.dsc "$work/src" >/dev/null) ||
            die "unpacking the source package failed"
        printf '%s\n' "$version"
        return
    fi
    upstream="${version#*:}"
    upstream="${upstream%-*}"
    orig="qemu_$upstream.orig.tar.xz"
    sum="$(source_file_sha256 "$version" "$orig")"
    if [ -n "$sum" ] && [ -f "$work/dl/$orig" ] &&
        [ "$(sha256sum "$work/dl/$orig" | cut -d' ' -f1)" = "$sum" ]; then
        say "the archive serves $orig but not the rest of source package $version: building that tarball (checked against the index's SHA-256) without Debian's patches, which touch nothing this build uses"
        mkdir -p "$work/src"
        tar -xJf "$work/dl/$orig" -C "$work/src" --strip-components=1 --no-same-owner ||
            die "unpacking $orig failed"
        printf '%s\n' "$version (upstream tarball)"
        return
    fi
    return 1
}

main() {
    local version key dir bin source candidate
    if [ "${1:-}" = --backports-entry ]; then
        ensure_backports_entry
        return
    fi
    command -v apt-get >/dev/null 2>&1 ||
        die "this script builds from Debian's QEMU source package and needs apt-get (Debian 12); elsewhere apply emulator/patches to QEMU 10.0 yourself and set BAREMARK_QEMU_PMU"

    # Fast path: a build of the pinned version (or of the last source built) is already there.
    cached() {
        local s
        for s in "$PINNED_VERSION" "$PINNED_VERSION (upstream tarball)" \
            "$(cat "$cache_root/qemu10-pmu-last-source" 2>/dev/null || true)"; do
            [ -n "$s" ] || continue
            bin="$cache_root/qemu-pmu-$(key_of "$s")/qemu-system-x86_64"
            if [ -x "$bin" ]; then
                ensure_firmware
                printf '%s\n' "$bin"
                return 0
            fi
        done
        return 1
    }
    cached && return

    # One build at a time (tests start several runs at once); the others wait and reuse it.
    mkdir -p "$cache_root"
    exec 9>"$cache_root/qemu-pmu.lock"
    if ! flock -n 9; then
        say "another build of the emulator is running; waiting for it"
        flock 9
    fi
    cached && return

    # Work directories of builds that were killed (we hold the lock: none is running).
    rm -rf "$cache_root"/build.*

    ensure_backports_entry
    ensure_build_deps
    ensure_firmware

    local start
    start=$(date +%s)
    # global: the EXIT trap runs after main has returned
    work="$(mktemp -d "$cache_root/build.XXXXXX")"
    trap 'rm -rf "${work:-}"' EXIT
    say "work directory $work"

    # The pinned version first; then the other 10.0.x versions apt knows, newest first.
    source=""
    for candidate in "$PINNED_VERSION" $(source_versions_10_0 | grep -vxF "$PINNED_VERSION"); do
        if [ "$candidate" != "$PINNED_VERSION" ]; then
            say "the pinned source $PINNED_VERSION cannot be had from the archive; trying $candidate"
        fi
        source="$(fetch_source "$candidate")" && break
        source=""
    done
    [ -n "$source" ] ||
        die "apt-get source found no QEMU 10.0 source (pinned $PINNED_VERSION; is the $SUITE deb-src entry there and apt-get update run?)"
    key="$(key_of "$source")"
    dir="$cache_root/qemu-pmu-$key"
    bin="$dir/qemu-system-x86_64"
    if [ -x "$bin" ]; then
        printf '%s\n' "$bin"
        return
    fi
    say "building QEMU $source with the emulated PMU (first use only; about 3 to 5 minutes on 2 cores)"
    say "cache $dir"
    local src="$work/src"

    # The Debian tarball has no edk2 firmware blobs: do not try to unpack them.
    sed -i 's/^    unpack_edk2_blobs = bzip2.found()/    unpack_edk2_blobs = false/' "$src/meson.build"
    grep -q '^    unpack_edk2_blobs = false' "$src/meson.build" ||
        die "meson.build changed: cannot turn off unpacking the edk2 blobs"
    printf '# baremark: only what its runs, its tests and kvm-unit-tests use\n%s\n' "$DEVICES" \
        >"$src/configs/devices/x86_64-softmmu/baremark.mak"
    # ... nor python/wheels: QEMU's own meson and pycotap, installed by configure offline.
    say "fetching QEMU's build-time Python wheels with pip: ${WHEELS[*]}"
    mkdir -p "$src/python/wheels"
    /usr/bin/python3 -m pip download -q --no-deps --only-binary=:all: -d "$src/python/wheels" \
        "${WHEELS[@]}" >&2 || die "pip could not download ${WHEELS[*]}"

    local p
    for p in "$here"/patches/*.patch; do
        say "applying $(basename "$p")"
        patch -d "$src" -p1 -s --no-backup-if-mismatch <"$p" || die "$(basename "$p") does not apply to $source"
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
    printf '%s\n' "$source" >"$dir.tmp/debian-version"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    printf '%s\n' "$source" >"$cache_root/qemu10-pmu-last-source"
    say "built in $(( $(date +%s) - start )) s: $bin"
    printf '%s\n' "$bin"
}

main "$@"
