#!/usr/bin/env bash
# Install the system tools the C backend's tests need, and only those that
# are missing.  Idempotent: a second run installs nothing and does not even
# refresh the package index.
#
#   bash scripts/install-ci-deps.sh              # gcc, clang, make (host builds)
#   bash scripts/install-ci-deps.sh --embedded   # also the Cortex-M cross
#                                                # toolchain and QEMU (~0.9 GB)
#
# Debian/Ubuntu only (apt-get).  Runs apt-get through sudo when not root.
set -euo pipefail

usage() {
    echo "usage: $0 [--embedded]" >&2
    exit 2
}

embedded=0
for arg in "$@"; do
    case "$arg" in
        --embedded) embedded=1 ;;
        -h|--help) usage ;;
        *) echo "$0: unknown argument: $arg" >&2; usage ;;
    esac
done

# package name -> a command it provides (used to decide whether it is present)
host_packages=(gcc:gcc clang:clang make:make binutils:ar)
embedded_packages=(
    gcc-arm-none-eabi:arm-none-eabi-gcc
    libnewlib-arm-none-eabi:
    qemu-system-arm:qemu-system-arm
)

wanted=("${host_packages[@]}")
if [[ $embedded -eq 1 ]]; then
    wanted+=("${embedded_packages[@]}")
fi

is_installed() {
    local package=$1 command=$2
    if [[ -n "$command" ]] && command -v "$command" >/dev/null 2>&1; then
        return 0
    fi
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for entry in "${wanted[@]}"; do
    package=${entry%%:*}
    command=${entry#*:}
    if ! is_installed "$package" "$command"; then
        missing+=("$package")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-ci-deps: nothing to install"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-ci-deps: apt-get not found; please install: ${missing[*]}" >&2
    exit 1
fi

as_root=()
if [[ $(id -u) -ne 0 ]]; then
    as_root=(sudo)
fi

echo "install-ci-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
