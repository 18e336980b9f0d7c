# On the GPU machine, after `python3 scripts/gpu_cases.py compile` here:
#   python3 benchmarks/micro/cholesky_upper_untouched.py
# Bitwise check: cholesky_block leaves the strict upper triangle (inf, nan, -0.0, noise)
# and the rows/columns beyond n exactly as they were.
import json, os, subprocess, sys, tempfile, numpy as np
sys.path.insert(0, "scripts")
import gpu_cases as g
f, func, sig, gen = g._cases()["s_cholesky_block"]
for n in [257, 1000, 4097]:
    vals = gen(np.random.default_rng(7), n)
    A0 = vals[0].copy()
    with tempfile.TemporaryDirectory() as d:
        p = g.run_bundle(".dev/gpu/appy-runner", ".dev/gpu/s_cholesky_block.json", json.load(open(".dev/gpu/s_cholesky_block.json"))["params"], vals, d)
        A = np.load(os.path.join(d, "A.npy"))
    m = vals[1]
    up = ~np.tril(np.ones(A.shape, bool))
    up[m:, :] = True; up[:, m:] = True
    same = np.array_equal(A[up].view(np.uint64), A0[up].view(np.uint64))
    print(f"n={m}: rc={p.returncode} untouched part bitwise equal: {same}; signbit at [1,{m-1}]: {np.signbit(A[1, m-1])}, A[0,{m-1}]={A[0, m-1]}, A[0,1]={A[0,1]}")
