"""APPy's group mode: one iteration of a parallel loop per group of threads, with a
scratchpad `appy.buffer(size, dtype)` (the group's shared memory on the GPU) that its
tensor statements load cooperatively and read at other offsets; the compiler places the
barriers. Each function must agree with NumPy running the same source."""
import numpy as np
import appy


# The 1-D Jacobi tile of APPy's slides, with bounds that are valid NumPy: tiles of 64
# points over the interior, n - 2 a multiple of 64.
# test: inp:f64[n] out:f64[n] | n=66,130,1282
@appy.jit
def jacobi_tile(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 64):
        buf = appy.buffer(64 + 2)
        buf[:] = inp[i - 1:i + 65]
        out[i:i + 64] = (buf[:-2] + buf[1:-1] + buf[2:]) / 3.0


# The same without the scratchpad, to compare against.
# test: inp:f64[n] out:f64[n] | n=66,130,1282
@appy.jit
def jacobi_plain(inp, out):
    #pragma parallel for
    for i in range(1, inp.shape[0] - 1, 64):
        out[i:i + 64] = (inp[i - 1:i + 63] + inp[i:i + 64] + inp[i + 1:i + 65]) / 3.0


# float32 scratchpads (dtype positional and keyword), two in one group, a reduction
# over one of them, and a row of a 2-D array per group.
# test: a:f32[m,40] w:f32[40] out:f32[m] | m=1,3,17 rtol=1e-5 atol=1e-5
@appy.jit
def rows_weighted(a, w, out):
    #pragma parallel for
    for r in range(a.shape[0]):
        row = appy.buffer(40, np.float32)
        t = appy.buffer(40, dtype=np.float32)
        row[:] = a[r, :]
        t[:] = row[::-1] * w
        out[r] = np.sum(t[1:] - row[:-1])


# A loop with no vector work runs one iteration per lane: its scratchpad is private to
# the iteration (not shared), read and written element by element.
# test: a:f64[n] out:f64[n] | n=1,5,300
@appy.jit
def private_scratch(a, out):
    #pragma parallel for
    for i in range(a.shape[0]):
        s = appy.buffer(3)
        s[0] = a[i]
        s[1] = 2.0 * s[0]
        s[2] = s[0] + s[1]
        out[i] = s[2] - s[1]
