"""NumPy's searching and testing functions inside kernels and in host code: `argmax`,
`argmin`, `any`, `all`, `linalg.norm`, `searchsorted`, `interp`, with NumPy's ties and
NaN handling."""
import numpy as np
import appy


# test: a:f64[n,m] out:i64[n,4] | n=1,7,40 m=2,13,300
@appy.jit
def row_arg(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        if a[i, 0] > 0.4:
            a[i, a.shape[1] // 2] = float("nan")
        out[i, 0] = np.argmax(a[i, :])
        out[i, 1] = np.argmin(a[i, :])
        out[i, 2] = np.argmax(a[i, 1:])
        out[i, 3] = np.argmin(a[i, ::-1])


# test: a:i64[n,m]@0..3 out:i64[n,2] | n=1,7,40 m=1,13,300
@appy.jit
def row_arg_ties(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i, 0] = np.argmax(a[i, :])
        out[i, 1] = np.argmin(a[i, :])


# test: a:i64[n,m]@0..2 b:bool[n,m] out:bool[n,4] | n=1,7,40 m=1,3,300
@appy.jit
def row_any_all(a, b, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i, 0] = np.any(a[i, :])
        out[i, 1] = np.all(a[i, :])
        out[i, 2] = np.any(b[i, :])
        out[i, 3] = np.all(b[i, :])


# test: a:f64[n,m] c:f32[n,m] k:i64[n,m]@-50..50 out:f64[n,3] | n=1,7,40 m=1,13,300 rtol=1e-5
@appy.jit
def row_norms(a, c, k, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i, 0] = np.linalg.norm(a[i, :])
        out[i, 1] = np.linalg.norm(c[i, :])
        out[i, 2] = np.linalg.norm(k[i, :])


# test: x:f64[n]@-3..60 xp:indptr[m]@1..5 fp:f64[m] s:indptr[m]@0..3 out:f64[n,2] pos:i64[n,3] | n=1,7,300 m=1,13,40
@appy.jit
def interp_points(x, xp, fp, s, out, pos):
    #pragma parallel for
    for i in range(x.shape[0]):
        xr = float(int(x[i]))
        out[i, 0] = np.interp(x[i], xp, fp)
        out[i, 1] = np.interp(xr, xp, fp)
        pos[i, 0] = np.searchsorted(xp, x[i])
        pos[i, 1] = np.searchsorted(s, xr)
        pos[i, 2] = np.searchsorted(s, int(x[i]))


# test: a:f64[n] | n=1,7,1000
@appy.jit
def host_search(a):
    """The same functions in host code, on a whole array."""
    return np.argmax(a), np.argmin(a), np.any(a), np.linalg.norm(a)


# test: a:f64[n,m] k:i64[n,m]@-9..9 out:f64[n,m] ik:i64[n,m] | n=1,7,40 m=1,13,300
@appy.jit
def row_cumsum(a, k, out, ik):
    """`np.cumsum` of a row into a row, of floats and ints, and of a shifted slice."""
    #pragma parallel for
    for i in range(a.shape[0]):
        out[i, :] = np.cumsum(a[i, :])
        ik[i, :] = np.cumsum(k[i, :])
        if a.shape[1] > 2:
            out[i, 1:] = np.cumsum(a[i, :-1])
