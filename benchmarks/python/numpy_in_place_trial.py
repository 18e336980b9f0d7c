"""A user's program on NumPy arrays through the GPU (the arrays used in place): a
weighted 5-point smoothing not among the tests, at sizes 1x1, 3x1031, 257x129 (float32)
and 2001x3, a read-only input with a transposed output view, and two Python threads
at once; every result against NumPy, the input checked unchanged. Run it twice with the
same APPY_CACHE_DIR to try a returning user's process:

    APPY_CACHE_DIR=/tmp/c python3 benchmarks/python/numpy_in_place_trial.py 1
    APPY_CACHE_DIR=/tmp/c python3 benchmarks/python/numpy_in_place_trial.py 2
"""
import sys, threading, numpy as np, appy

@appy.jit
def smooth(a, b, w):
    #pragma parallel for
    for i in range(1, a.shape[0] - 1):
        #pragma simd
        for j in range(1, a.shape[1] - 1):
            b[i, j] = w * a[i, j] + (1 - w) * 0.25 * (a[i-1, j] + a[i+1, j] + a[i, j-1] + a[i, j+1])

def ref(a, b, w):
    b = b.copy()
    b[1:-1, 1:-1] = w * a[1:-1, 1:-1] + (1 - w) * 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    return b

appy.device("gpu")
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
ok = True
for dt, shape in [(np.float64, (1, 1)), (np.float64, (3, 1031)), (np.float32, (257, 129)), (np.float64, (2001, 3))]:
    a = rng.random(shape).astype(dt) + 0.5
    b = rng.random(shape).astype(dt)
    want = ref(a, b, 0.3)
    a0 = a.copy()
    smooth(a, b, 0.3)
    good = np.allclose(b, want, rtol=1e-5 if dt == np.float32 else 1e-12) and np.array_equal(a, a0)
    ok &= good
    print(dt.__name__, shape, "ok" if good else "WRONG")
# a read-only input and a transposed output view
a = rng.random((300, 200)) + 0.5; a.setflags(write=False)
bt = rng.random((200, 300)); b = bt.T
want = ref(a, b, 0.7); smooth(a, b, 0.7)
good = np.allclose(b, want, rtol=1e-12); ok &= good; print("readonly/transposed", "ok" if good else "WRONG")
# two threads at once
res = {}
def worker(k):
    r = np.random.default_rng(100 + k)
    a = r.random((500 + k, 700)) + 0.5; b = r.random((500 + k, 700))
    want = ref(a, b, 0.5); smooth(a, b, 0.5); res[k] = np.allclose(b, want, rtol=1e-12)
ts = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
print("threads", res); ok &= all(res.values())
print("signatures", smooth.signatures())
print("ALL OK" if ok else "SOME WRONG")
