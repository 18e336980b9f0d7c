#!/usr/bin/env bash
# The main job: set up, build and install the Python package, and run the quick start
# (a softmax kernel on NumPy arrays, on the GPU when one is present, else on the CPU
# back end), checked against NumPy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 -m pip install -q ./crates/appy-python
python3 examples/quickstart.py
