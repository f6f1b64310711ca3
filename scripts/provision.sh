# Provisioning shared by run-qemu.sh and test.sh (sourced, not run).
# Installs what baremark needs on a fresh Debian/Ubuntu machine: the pinned Rust toolchain
# (rust-toolchain.toml), QEMU (9.0 or later; on Debian 12 QEMU 10 from bookworm-backports)
# and OVMF. Says what to do where it cannot install by itself.

baremark_say() { printf 'baremark: %s\n' "$*" >&2; }

# "MAJOR.MINOR" of a QEMU binary ("QEMU emulator version 10.0.2 (Debian ...)"), or nothing.
baremark_qemu_version() {
    "$1" --version 2>/dev/null |
        awk 'NR == 1 { for (i = 1; i < NF; i++) if ($i == "version") { split($(i + 1), v, "."); print v[1] "." v[2]; exit } }'
}

# Whether QEMU version $1 (MAJOR.MINOR) is older than 9.0: TCG's local APIC has x2APIC from
# 9.0 on, and newer CPU models and firmware paths come with it.
baremark_qemu_too_old() {
    [ -n "$1" ] && [ "${1%%.*}" -lt 9 ]
}

baremark_provision() {
    export PATH="$HOME/.cargo/bin:$PATH"
    if ! command -v rustup >/dev/null 2>&1; then
        baremark_say "rustup is missing: install it from https://rustup.rs, then run this again."
        return 1
    fi
    # rustup does not install the toolchain named in rust-toolchain.toml by itself.
    if ! rustup toolchain install >/dev/null 2>&1; then
        baremark_say "installing the pinned toolchain failed; output follows"
        rustup toolchain install
        return 1
    fi

    local missing=() apt_target=() qemu version
    local here
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    qemu="${BAREMARK_QEMU:-$(command -v qemu-system-x86_64 2>/dev/null || true)}"
    version=""
    [ -n "$qemu" ] && version="$(baremark_qemu_version "$qemu")"
    if [ -z "$qemu" ]; then
        missing+=(qemu-system-x86)
    elif baremark_qemu_too_old "$version"; then
        if [ -n "${BAREMARK_QEMU:-}" ]; then
            baremark_say "BAREMARK_QEMU ($qemu) is QEMU $version, older than 9.0 (no x2APIC under TCG); using it as asked"
        else
            baremark_say "the installed qemu-system-x86_64 is QEMU $version, older than 9.0 (no x2APIC under TCG, older CPU models): installing a newer one"
            missing+=(qemu-system-x86)
        fi
    fi
    # Debian 12 has QEMU 7.2; its bookworm-backports suite has QEMU 10.0 (and the seabios it
    # needs), installed from there by name only.
    if [[ " ${missing[*]} " == *" qemu-system-x86 "* ]] && command -v apt-get >/dev/null 2>&1 &&
        grep -qs '^VERSION_CODENAME=bookworm$' /etc/os-release; then
        apt_target=(-t bookworm-backports)
    fi
    local ovmf_found="${BAREMARK_OVMF:-}" f
    for f in /usr/share/ovmf/OVMF.fd /usr/share/qemu/OVMF.fd /usr/share/OVMF/OVMF_CODE_4M.fd \
        /usr/share/OVMF/OVMF_CODE.fd /usr/share/edk2/x64/OVMF_CODE.fd /usr/share/edk2/ovmf/OVMF_CODE.fd; do
        [ -f "$f" ] && ovmf_found="$f"
    done
    [ -n "$ovmf_found" ] || missing+=(ovmf)
    # xmllint checks the JUnit reports of the CI gate against their schema (tests/tests/gate.rs).
    command -v xmllint >/dev/null 2>&1 || missing+=(libxml2-utils)
    # cachegrind checks the reference cache simulator (tests/tests/cachesim_cachegrind.rs).
    command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
    if [ "${#missing[@]}" -gt 0 ]; then
        local sudo=""
        if [ "$(id -u)" != 0 ]; then
            if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo"; else sudo="none"; fi
        fi
        if command -v apt-get >/dev/null 2>&1 && [ "$sudo" != none ]; then
            if [ "${#apt_target[@]}" -gt 0 ]; then
                # adds the bookworm-backports sources entry if there is none (says so)
                bash "$here/emulator/build.sh" --backports-entry || return 1
                baremark_say "installing ${missing[*]} with apt-get (qemu-system-x86 from bookworm-backports: QEMU 10)"
            else
                baremark_say "installing ${missing[*]} with apt-get"
            fi
            local apt_log
            apt_log=$(mktemp)
            # ovmf comes from the release itself: bookworm-backports has none
            if ! { $sudo apt-get update -qq &&
                { [[ " ${missing[*]} " != *" ovmf "* ]] || DEBIAN_FRONTEND=noninteractive \
                    $sudo apt-get install -y -qq ovmf; } &&
                { [[ " ${missing[*]} " != *" libxml2-utils "* ]] || DEBIAN_FRONTEND=noninteractive \
                    $sudo apt-get install -y -qq libxml2-utils; } &&
                { [[ " ${missing[*]} " != *" valgrind "* ]] || DEBIAN_FRONTEND=noninteractive \
                    $sudo apt-get install -y -qq valgrind; } &&
                { [[ " ${missing[*]} " != *" qemu-system-x86 "* ]] || DEBIAN_FRONTEND=noninteractive \
                    $sudo apt-get install -y -qq "${apt_target[@]}" qemu-system-x86; }; } >"$apt_log" 2>&1; then
                cat "$apt_log" >&2
                baremark_say "apt-get could not install ${missing[*]} (output above)"
                rm -f "$apt_log"
                return 1
            fi
            rm -f "$apt_log"
        else
            baremark_say "missing: ${missing[*]}. Install them, e.g.:"
            baremark_say "  Debian/Ubuntu: sudo apt-get install qemu-system-x86 ovmf libxml2-utils valgrind"
            baremark_say "  Debian 12:     QEMU 10 from bookworm-backports: sudo bash emulator/build.sh --backports-entry &&"
            baremark_say "                 sudo apt-get install -t bookworm-backports qemu-system-x86"
            baremark_say "  Fedora:        sudo dnf install qemu-system-x86 edk2-ovmf libxml2 valgrind"
            baremark_say "  Arch:          sudo pacman -S qemu-full edk2-ovmf libxml2 valgrind"
            return 1
        fi
    fi
}

baremark_build() {
    if [ ! -d target/x86_64-unknown-none ]; then
        baremark_say "first build: compiling the bootloader stages and the kernel (about 4 minutes)"
    fi
    cargo build --quiet -p baremark
}
