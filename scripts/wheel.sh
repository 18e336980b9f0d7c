#!/usr/bin/env bash
# Builds the Python package as one portable wheel:
#   dist/appy_py-VERSION-cp39-abi3-manylinux_2_XX_x86_64.whl
# (Python >= 3.9, one wheel for every CPython version; XX is the oldest glibc the build
# machine's libraries allow, 2_36 on Debian 12).
#
# - The extension is built in release mode and stripped. LLVM and MLIR are linked into
#   it statically, so a user needs neither.
# - LLVM's OpenMP runtime (the CPU back end's parallel loops) is not a link-time
#   dependency (it is loaded when the CPU back end starts), so it is copied into the
#   package as appy/_vendor/libomp.so.5, with LLVM's license beside it.
# - Every other shared library the extension needs beyond glibc, libstdc++ and libgcc
#   (zlib and zstd, which LLVM uses) is copied into the wheel by maturin's repair step
#   (`--auditwheel repair`, which needs `patchelf`: scripts/setup.sh installs it) and
#   found through the extension's RPATH.
# - BLAS comes from NumPy's own OpenBLAS at run time; libdevice (GPU math) from NVIDIA's
#   pip packages, Triton or a CUDA toolkit (see docs/PYTHON.md, "Installing").
#
# Usage: bash scripts/wheel.sh [OUT_DIR]     (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
pkg=crates/appy-python/python/appy
vendor=$pkg/_vendor

libomp=""
for c in "${APPY_LIBOMP:-}" /usr/lib/llvm-22/lib/libomp.so.5 /usr/lib/x86_64-linux-gnu/libomp.so.5; do
    if [ -n "$c" ] && [ -f "$c" ]; then libomp=$c; break; fi
done
if [ -z "$libomp" ]; then
    echo "wheel.sh: LLVM's OpenMP runtime (libomp.so.5) not found: run scripts/setup.sh (libomp-22-dev)" >&2
    exit 1
fi
command -v patchelf >/dev/null || { echo "wheel.sh: patchelf not found: run scripts/setup.sh" >&2; exit 1; }

# maturin's repair step patches the linked library in place, and cargo's copies of it are
# hard links to the same file: link afresh before, and drop the patched copies after
# (a later source install, `pip install ./crates/appy-python`, then relinks too).
fresh_link() { rm -f target/maturin/lib_native.so target/release/lib_native.so target/release/deps/lib_native*.so; }
fresh_link
# The vendored files live in the source tree only while the wheel is built.
rm -rf "$vendor"
trap 'rm -rf "$vendor"; fresh_link' EXIT
mkdir -p "$vendor"
cp -L "$libomp" "$vendor/libomp.so.5"
strip --strip-unneeded "$vendor/libomp.so.5"
license=""
for c in /usr/lib/llvm-22/share/doc/LICENSE.TXT /usr/share/doc/libomp-22-dev/copyright /usr/share/doc/llvm-22/copyright; do
    if [ -f "$c" ]; then license=$c; break; fi
done
if [ -n "$license" ]; then cp "$license" "$vendor/LICENSE.LLVM.txt"; fi

mkdir -p "$out"
rm -f "$out"/appy_py-*.whl
python3 -m maturin build --release --strip --auditwheel repair \
    -m crates/appy-python/Cargo.toml --out "$out"
whl=$(ls "$out"/appy_py-*.whl)
echo "wheel: $whl ($(du -m "$whl" | cut -f1) MB)"
