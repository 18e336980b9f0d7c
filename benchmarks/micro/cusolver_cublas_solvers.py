# cuSOLVER potrf (upper vs lower, 32- and 64-bit API) and cuBLAS trsv/trsm against
# torch.linalg on the NPBench sizes (cholesky n = 900, trisolv n = 16000), on the GPU
# machine: python3 benchmarks/micro/cusolver_cublas_solvers.py
import ctypes, cupy as cp, numpy as np, glob, time
def lib(name):
    for p in sorted(glob.glob(f"/usr/local/cuda/lib64/lib{name}.so*")):
        try: return ctypes.CDLL(p)
        except OSError: pass
cub = lib("cublas"); sol = lib("cusolver")
h = ctypes.c_void_p(); assert cub.cublasCreate_v2(ctypes.byref(h)) == 0
s = ctypes.c_void_p(); assert sol.cusolverDnCreate(ctypes.byref(s)) == 0
stream = cp.cuda.Stream.null
def timeit(f, reps=20):
    f(); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(); f(); e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
    return np.median(ts), min(ts)
# potrf N=900
n = 900
B = np.random.rand(n, n); A0 = cp.asarray(B @ B.T + n * np.eye(n))
A = A0.copy()
lw = ctypes.c_int()
info = cp.zeros(1, dtype=cp.int32)
for uplo, nm in [(1, "upper"), (0, "lower")]:
    sol.cusolverDnDpotrf_bufferSize(s, uplo, n, ctypes.c_void_p(A.data.ptr), n, ctypes.byref(lw))
    ws = cp.empty(lw.value, dtype=cp.float64)
    def f():
        A[...] = A0
        sol.cusolverDnDpotrf(s, uplo, n, ctypes.c_void_p(A.data.ptr), n, ctypes.c_void_p(ws.data.ptr), lw.value, ctypes.c_void_p(info.data.ptr))
    def g():
        A[...] = A0
    print(f"potrf {nm}: lwork {lw.value}, (copy+potrf) median/min ms {timeit(f)}, copy alone {timeit(g)}; info {int(info[0])}")
# 64-bit API Xpotrf
try:
    params = ctypes.c_void_p(); sol.cusolverDnCreateParams(ctypes.byref(params))
    dws = ctypes.c_size_t(); hws = ctypes.c_size_t()
    CUDA_R_64F = 1
    for uplo, nm in [(1, "upper"), (0, "lower")]:
        r = sol.cusolverDnXpotrf_bufferSize(s, params, uplo, ctypes.c_int64(n), CUDA_R_64F, ctypes.c_void_p(A.data.ptr), ctypes.c_int64(n), CUDA_R_64F, ctypes.byref(dws), ctypes.byref(hws))
        dbuf = cp.empty(max(dws.value, 1), dtype=cp.uint8); hbuf = ctypes.create_string_buffer(max(hws.value, 1))
        def f():
            A[...] = A0
            sol.cusolverDnXpotrf(s, params, uplo, ctypes.c_int64(n), CUDA_R_64F, ctypes.c_void_p(A.data.ptr), ctypes.c_int64(n), CUDA_R_64F, ctypes.c_void_p(dbuf.data.ptr), ctypes.c_size_t(dws.value), hbuf, ctypes.c_size_t(hws.value), ctypes.c_void_p(info.data.ptr))
        print(f"Xpotrf {nm}: r={r} ws {dws.value} {hws.value}: {timeit(f)}")
except Exception as e:
    print("Xpotrf failed", e)
import torch
At = torch.as_tensor(A0, device="cuda")
def t():
    torch.linalg.cholesky(At)
print("torch.linalg.cholesky", timeit(t))
# trsv vs trsm N=16000
n = 16000
L = cp.asarray(np.tril(np.random.rand(n, n)) / n + np.eye(n) * 1.5)
b = cp.random.rand(n); x = b.copy()
for nm, fn in [("trsv", lambda: cub.cublasDtrsv_v2(h, 1, 1, 0, n, ctypes.c_void_p(L.data.ptr), n, ctypes.c_void_p(x.data.ptr), 1))]:
    def f():
        x[...] = b; fn()
    print(nm, timeit(f))
one = ctypes.c_double(1.0)
def f():
    x[...] = b
    # row-major L = column-major U^T: solve x^T U = b^T  <=> side right, upper, no-trans, m=1
    cub.cublasDtrsm_v2(h, 1, 1, 0, 0, 1, n, ctypes.byref(one), ctypes.c_void_p(L.data.ptr), n, ctypes.c_void_p(x.data.ptr), 1)
print("trsm right", timeit(f))
Lt = torch.as_tensor(L, device="cuda"); bt = torch.as_tensor(b, device="cuda")
def t():
    torch.linalg.solve_triangular(Lt, bt[:, None], upper=False)
print("torch solve_triangular", timeit(t))
xs = cp.asarray(x)
print("trsm vs numpy ok", float(cp.abs(L @ xs - b).max()))
