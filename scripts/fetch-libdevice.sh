#!/usr/bin/env bash
# Fetches NVIDIA's libdevice (libdevice.10.bc, the GPU math library that appy links
# into kernels using exp/log/tanh/...) from the PyPI wheel nvidia-cuda-nvcc-cu12 into
# .dev/libdevice.10.bc. NVIDIA's files are never committed.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.dev/libdevice.10.bc
if [ -s "$dest" ]; then echo "libdevice: $dest"; exit 0; fi
mkdir -p .dev
tmp=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version 3.11 -d "$tmp" nvidia-cuda-nvcc-cu12==12.9.86
python3 - "$tmp" "$dest" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(whl) as z:
    name = [n for n in z.namelist() if n.endswith("libdevice.10.bc")][0]
    open(sys.argv[2], "wb").write(z.read(name))
PY
rm -rf "$tmp"
echo "libdevice: $dest"
