#!/usr/bin/env bash
# Builds the Linux guest (docs/linux-guest.md): Debian 12's Linux 6.1 kernel and an initramfs
# with busybox-static, Debian's perf and its shared libraries, the static C programs of
# tests/linux and its init; and prints the directory that holds them:
#   vmlinuz       the kernel of the linux-image-6.1.0-*-amd64 package
#   initrd.gz     the initramfs (newc cpio, written by `cpio`, gzip'd)
#   bin/          the programs as built (loop, selfmon, overflow), for reading or disassembly
#   packages.txt  the Debian packages and versions it was built from
#
# The packages come from the machine's apt sources with `apt-get download` (bookworm's
# candidates: the kernel that bookworm's linux-image-amd64 depends on, linux-perf,
# busybox-static) and are unpacked with dpkg-deb under a scratch directory: never installed,
# never in the repository (the .deb files stay in .../linux-guest-debs-<versions key>/). The
# result is cached in
#   ${BAREMARK_CACHE:-~/.cache/baremark}/linux-guest-<key>/
# where <key> hashes the package versions, the host's gcc and libc6 versions, tests/linux/*
# and this script: a new kernel
# version on the mirror or a changed program builds a new guest; otherwise the cached one is
# printed at once. Tools it needs and lacks (cpio, gcc, libc6-dev, and perf's libraries when
# the host lacks them) it installs with apt-get, saying so on stderr. Progress goes to
# stderr; stdout is only the directory.
#
# Usage: scripts/linux-guest.sh            (prints the directory)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$repo/tests/linux"
cache="${BAREMARK_CACHE:-$HOME/.cache/baremark}"

say() { echo "linux-guest: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo "$@"
    else
        die "needs root to run: $* (run it as root, or give this user password-less sudo)"
    fi
}

apt_install() {
    say "installing with apt-get: $*"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2 ||
        die "apt-get install $* failed"
}

updated=
apt_update_once() {
    [ -n "$updated" ] && return 0
    say "apt-get update (the package lists are missing or stale)"
    as_root apt-get update >&2 || die "apt-get update failed"
    updated=yes
}

for tool in apt-get apt-cache dpkg-deb sha256sum flock; do
    command -v "$tool" >/dev/null || die "$tool is missing: this script needs a Debian 12 (bookworm) machine"
done
missing=()
command -v cpio >/dev/null || missing+=(cpio)
command -v gcc >/dev/null || missing+=(gcc)
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || missing+=(libc6-dev)
command -v gzip >/dev/null || missing+=(gzip)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

# The candidate version of a package in the apt sources ("" when there is none).
candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2 }' | sed 's/(none)//'; }

meta=$(candidate linux-image-amd64)
if [ -z "$meta" ] || [ -z "$(candidate linux-perf)" ] || [ -z "$(candidate busybox-static)" ]; then
    apt_update_once
    meta=$(candidate linux-image-amd64)
fi
case "$meta" in
    6.1.*) ;;
    *) die "linux-image-amd64's candidate is '$meta', not bookworm's 6.1 (is this Debian 12? are backports pinned above bookworm?)" ;;
esac
# "Depends: linux-image-6.1.0-56-amd64 (= 6.1.192-2)"
kernel_dep=$(apt-cache show "linux-image-amd64=$meta" | awk '/^Depends:/ { print; exit }')
kernel_pkg=$(echo "$kernel_dep" | sed -n 's/^Depends: \(linux-image-6\.1\.0-[0-9]*-amd64\) (= \([^)]*\)).*/\1/p')
kernel_ver=$(echo "$kernel_dep" | sed -n 's/^Depends: \(linux-image-6\.1\.0-[0-9]*-amd64\) (= \([^)]*\)).*/\2/p')
[ -n "$kernel_pkg" ] && [ -n "$kernel_ver" ] || die "cannot read the kernel package from linux-image-amd64 $meta's '$kernel_dep'"
perf_ver=$(candidate linux-perf)
case "$perf_ver" in
    6.1.*) ;;
    *) die "linux-perf's candidate is '$perf_ver', not bookworm's perf 6.1" ;;
esac
busybox_ver=$(candidate busybox-static)
[ -n "$busybox_ver" ] || die "busybox-static has no candidate version in the apt sources"

packages="$kernel_pkg=$kernel_ver linux-perf=$perf_ver busybox-static=$busybox_ver"
key=$( {
    echo "$packages"
    # the host's compiler and C library build the programs; perf's libraries are the host's
    gcc --version | head -1
    dpkg-query -W -f '${Version}\n' libc6
    cat "${BASH_SOURCE[0]}"
    for f in "$src"/*; do
        echo "== $(basename "$f")"
        cat "$f"
    done
} | sha256sum | cut -c1-16)
out="$cache/linux-guest-$key"

mkdir -p "$cache"
exec 9>"$cache/linux-guest.lock"
flock 9 # one build at a time; a second caller then finds the first one's result
if [ -f "$out/complete" ]; then
    echo "$out"
    exit 0
fi

say "building $out from $packages"
work=$(mktemp -d "$cache/linux-guest-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/pkg" "$work/root" "$work/out/bin"

# The downloaded packages are kept apart, keyed by their versions alone, so that a change
# of the programs or the init rebuilds without downloading 75 MB again.
debs="$cache/linux-guest-debs-$(echo "$packages" | sha256sum | cut -c1-16)"
# apt-get download writes to the current directory; as root it would hand the download to the
# _apt user, which cannot write here, so it runs unsandboxed (it only fetches files).
download() {
    rm -rf "$debs" && mkdir -p "$debs" &&
        (cd "$debs" && apt-get -o APT::Sandbox::User=root download $packages >&2)
}
if [ ! -f "$debs/complete" ]; then
    if ! download; then
        apt_update_once
        download || die "apt-get download $packages failed"
    fi
    touch "$debs/complete"
fi

deb() { ls "$debs/$1"_*.deb 2>/dev/null | head -1; }
kernel_deb=$(deb "$kernel_pkg")
perf_deb=$(deb linux-perf)
busybox_deb=$(deb busybox-static)
[ -f "$kernel_deb" ] && [ -f "$perf_deb" ] && [ -f "$busybox_deb" ] || die "a downloaded package is missing in $debs"

# dpkg -x unpacks perf and busybox whole; of the kernel only ./boot is unpacked (the same
# tar stream dpkg -x reads), since its 400 MB of modules are not needed: the PMU driver, the
# serial console and the initramfs's gzip are built in.
dpkg -x "$perf_deb" "$work/pkg/perf"
dpkg -x "$busybox_deb" "$work/pkg/busybox"
mkdir -p "$work/pkg/kernel"
dpkg-deb --fsys-tarfile "$kernel_deb" | tar -x -C "$work/pkg/kernel" --wildcards './boot/vmlinuz-*'
vmlinuz=$(ls "$work"/pkg/kernel/boot/vmlinuz-* | head -1)
[ -f "$vmlinuz" ] || die "no vmlinuz in $kernel_deb"
cp "$vmlinuz" "$work/out/vmlinuz"

perf_bin="$work/pkg/perf/usr/bin/perf"
[ -f "$perf_bin" ] && [ "$(head -c4 "$perf_bin" | od -An -c | tr -d ' ')" = '177ELF' ] ||
    die "$perf_bin is not the perf binary (an ELF file)"
busybox_bin="$work/pkg/busybox/bin/busybox"
[ -f "$busybox_bin" ] || die "no bin/busybox in $busybox_deb"

# The programs: static, so the initramfs needs no C library for them.
say "compiling tests/linux with $(gcc --version | head -1)"
cflags=(-O2 -Wall -Wextra -Werror -static)
gcc "${cflags[@]}" -nostdlib -o "$work/out/bin/loop" "$src/loop.c"
gcc "${cflags[@]}" -o "$work/out/bin/selfmon" "$src/selfmon.c"
gcc "${cflags[@]}" -o "$work/out/bin/overflow" "$src/overflow.c"
for prog in region nullsys sample intrude; do
    gcc "${cflags[@]}" -o "$work/out/bin/$prog" "$src/$prog.c"
done

# The initramfs tree.
root="$work/root"
mkdir -p "$root/bin" "$root/usr/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$busybox_bin" "$root/bin/busybox"
cp "$perf_bin" "$root/usr/bin/perf"
cp "$work/out/bin/"* "$root/bin/"
cp "$src/init" "$root/init"
chmod 755 "$root/init" "$root/bin/"* "$root/usr/bin/perf"

# perf's shared libraries, as ldd resolves them for the unpacked binary: the host's copies
# (bookworm's, the versions perf was built against), at the paths ldd prints, so the
# dynamic loader finds them where the binary's interpreter path and the default search
# path point.
libs=$(ldd "$perf_bin" 2>&1 || true)
if grep -q 'not found' <<<"$libs"; then
    deps=$(dpkg-deb -f "$perf_deb" Depends | tr ',' '\n' | sed 's/(.*)//; s/:any//; s/ //g' |
        grep -v -e '^perl$' -e '^python3$' -e '^$')
    say "the host lacks libraries perf needs: $(grep 'not found' <<<"$libs" | awk '{ print $1 }' | tr '\n' ' ')"
    # shellcheck disable=SC2086
    apt_install $deps
    libs=$(ldd "$perf_bin" 2>&1 || true)
fi
grep -q 'not found' <<<"$libs" && die "perf's libraries are still missing: $(grep 'not found' <<<"$libs")"
grep -q '=> /' <<<"$libs" || die "ldd found no libraries for $perf_bin: $libs"
for lib in $(grep -o '/[^ ]*' <<<"$libs" | sort -u); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done

# newc cpio (the format the kernel unpacks), entries sorted, owned by root, mtimes fixed;
# `cpio` from Debian's cpio package writes it.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
    cpio -o -H newc -R 0:0 --reproducible --quiet | gzip -9 -n >"$work/out/initrd.gz")

{
    echo "# Debian packages of this Linux guest (scripts/linux-guest.sh; never installed)"
    for p in $packages; do echo "$p"; done
    echo "# shared libraries of perf, from the host"
    sed 's/ (0x[0-9a-f]*)$//' <<<"$libs"
} >"$work/out/packages.txt"
touch "$work/out/complete"
rm -rf "$out"
mv "$work/out" "$out"
say "built $out (initrd.gz $(du -h "$out/initrd.gz" | cut -f1))"
echo "$out"
