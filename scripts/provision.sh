# Provisioning shared by run-qemu.sh and test.sh (sourced, not run).
# Installs what baremark needs on a fresh Debian/Ubuntu machine: the pinned Rust toolchain
# (rust-toolchain.toml), QEMU and OVMF. Says what to do where it cannot install by itself.

baremark_say() { printf 'baremark: %s\n' "$*" >&2; }

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

    local missing=()
    command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
    local ovmf_found="${BAREMARK_OVMF:-}" f
    for f in /usr/share/ovmf/OVMF.fd /usr/share/qemu/OVMF.fd /usr/share/OVMF/OVMF_CODE_4M.fd \
        /usr/share/OVMF/OVMF_CODE.fd /usr/share/edk2/x64/OVMF_CODE.fd /usr/share/edk2/ovmf/OVMF_CODE.fd; do
        [ -f "$f" ] && ovmf_found="$f"
    done
    [ -n "$ovmf_found" ] || missing+=(ovmf)
    if [ "${#missing[@]}" -gt 0 ]; then
        local sudo=""
        if [ "$(id -u)" != 0 ]; then
            if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo"; else sudo="none"; fi
        fi
        if command -v apt-get >/dev/null 2>&1 && [ "$sudo" != none ]; then
            baremark_say "installing ${missing[*]} with apt-get"
            local apt_log
            apt_log=$(mktemp)
            if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                $sudo apt-get install -y -qq "${missing[@]}"; } >"$apt_log" 2>&1; then
                cat "$apt_log" >&2
                baremark_say "apt-get could not install ${missing[*]} (output above)"
                rm -f "$apt_log"
                return 1
            fi
            rm -f "$apt_log"
        else
            baremark_say "missing: ${missing[*]}. Install them, e.g.:"
            baremark_say "  Debian/Ubuntu: sudo apt-get install qemu-system-x86 ovmf"
            baremark_say "  Fedora:        sudo dnf install qemu-system-x86 edk2-ovmf"
            baremark_say "  Arch:          sudo pacman -S qemu-full edk2-ovmf"
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
