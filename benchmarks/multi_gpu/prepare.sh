#!/usr/bin/env bash
# Compiles the bundles of kernels.py (needs the compiler, no GPU): prepare.sh APPY OUTDIR
set -euo pipefail
APPY=${1:?appy binary with the compiler}; OUT=${2:?output directory}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
"$APPY" compile "$HERE/kernels.py" --func jacobi_2d --signature 'f64[:,:],f64[:,:],int' -o "$OUT/jacobi_2d.json"
"$APPY" compile "$HERE/kernels.py" --func triad --signature 'f32[:],f32[:],f32[:],float' -o "$OUT/triad.json"
"$APPY" compile "$HERE/kernels.py" --func matmul_loops --signature 'f32[:,:],f32[:,:],f32[:,:]' -o "$OUT/matmul_loops.json"
"$APPY" compile "$HERE/kernels.py" --func dot_hist --signature 'f64[:],f64[:],f64[:]' -o "$OUT/dot_hist.json"
