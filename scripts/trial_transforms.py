"""A returning user's trial of loop transforms and group mode through the package: a
shared-memory tile of 128, a split with a tune(...) list inside a joined nest, float64
and float32 in one process, two Python threads, a checked assume(...) kept and broken
(ValueError at the clause), every result against py_func (NumPy).

    python3 scripts/trial_transforms.py [SEED]    # prints ALL OK or the failures
"""
import sys, threading, numpy as np, appy

@appy.jit
def smooth(a, out):
    #pragma parallel for
    for i in range(1, a.shape[0] - 1, 128):
        buf = appy.buffer(130)
        buf[:] = a[i - 1:i + 129]
        out[i:i + 128] = 0.25 * buf[:-2] + 0.5 * buf[1:-1] + 0.25 * buf[2:]

@appy.jit
def rowdot(A, x, y):
    #pragma parallel for transform(split(j, tune(2, 8), inner=unr), join(i, k))
    for i in range(A.shape[0]):
        #pragma parallel for
        for k in range(A.shape[1]):
            s = 0.0
            for j in range(A.shape[2]):
                s += A[i, k, j] * x[j]
            y[i, k] = s

@appy.jit
def rowsum(a, out):
    #pragma parallel for transform(assume(j, multiple=8), split(j, 4, inner=unr))
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s

def check(name, got, want, tol):
    err = np.max(np.abs(got - want)) if got.size else 0.0
    ok = err <= tol * max(1.0, np.max(np.abs(want)) if want.size else 1.0)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: max err {err:.2e}")
    return ok

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
good = True
for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
    n = 128 * 37 + 2
    a = rng.random(n).astype(dt) - 0.5
    out = np.zeros(n, dt); want = np.zeros(n, dt)
    smooth(a, out); smooth.py_func(a, want)
    good &= check(f"smooth {dt.__name__}", out, want, tol)
    for shape in ((5, 7, 13), (1, 1, 1), (3, 11, 64)):
        A = (rng.random(shape) - 0.5).astype(dt); x = (rng.random(shape[2]) - 0.5).astype(dt)
        y = np.zeros(shape[:2], dt); w = np.zeros(shape[:2], dt)
        rowdot(A, x, y); rowdot.py_func(A, x, w)
        good &= check(f"rowdot {dt.__name__} {shape}", y, w, tol * shape[2])

res = {}
def worker(k):
    r = np.random.default_rng(100 + k)
    A = r.random((6, 9, 17)) - 0.5; x = r.random(17) - 0.5
    y = np.zeros((6, 9)); w = np.zeros((6, 9))
    rowdot(A, x, y); rowdot.py_func(A, x, w)
    res[k] = np.max(np.abs(y - w))
ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
for k, e in res.items():
    print(f"{'ok  ' if e < 1e-12 else 'FAIL'} thread {k}: max err {e:.2e}")
    good &= e < 1e-12
a = rng.random((37, 24)); o = np.zeros(37); w = np.zeros(37)
rowsum(a, o); rowsum.py_func(a, w)
good &= check("assume kept (24 columns)", o, w, 1e-12)
try:
    rowsum(rng.random((37, 12)), o)
    print("FAIL assume broken (12 columns): no error"); good = False
except ValueError as e:
    ok = "the assumption does not hold: the loop runs 12 iterations, not a multiple of 8" in str(e)
    print(f"{'ok  ' if ok else 'FAIL'} assume broken (12 columns): {str(e).splitlines()[0]}")
    good &= ok
print("ALL OK" if good else "SOME FAILED")
sys.exit(0 if good else 1)
