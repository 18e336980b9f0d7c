#!/usr/bin/env bash
# The main job: set up, build, and run an example kernel end to end (on the GPU when
# one is present, else on the CPU back end), then check the result against NumPy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release -q -p appy-tools --bin appy
out=$(mktemp -d)
python3 - "$out" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
np.save(f"{d}/a.npy", rng.random((1000, 777), dtype=np.float32) * 8 - 4)
np.save(f"{d}/b.npy", np.zeros((1000, 777), np.float32))
PY
./target/release/appy run examples/softmax.py --func softmax \
    --arg a=@"$out/a.npy" --arg b=@"$out/b.npy" --arg M=1000 --arg N=777 --out "$out/result"
python3 - "$out" <<'PY'
import sys, numpy as np
d = sys.argv[1]
a = np.load(f"{d}/a.npy"); b = np.load(f"{d}/result/b.npy")
e = np.exp(a - a.max(axis=1, keepdims=True)); want = e / e.sum(axis=1, keepdims=True)
err = np.abs(b - want).max()
print(f"softmax 1000x777 float32: max |appy - numpy| = {err:.2e}")
sys.exit(0 if err < 1e-5 else 1)
PY
