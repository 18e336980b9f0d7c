"""`assert` (an AssertionError at the statement when false; the message is not
evaluated) and a tuple stored into a row (`out[i, j] = r, g, b, a`), as APPy's
individual-mode shader tests write them."""
import numpy as np
import appy


# test: out:u8[h,w,4] | h=1,7,30 w=1,13,5
@appy.cpu_shader
def rgba(out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 255, i % 256, (i * j) % 256, 7
    assert out.shape[2] == 4, "four channels"
    # np.all and np.any of arrays of any rank.
    assert np.all(out[:, :, 0] == 255) and np.any(out == 7)
    assert not np.all(out == 255)


# test: a:f64[n] out:f64[n,3] | n=1,7,100
@appy.jit
def rows_of_three(a, out):
    assert a.shape[0] == out.shape[0]
    #pragma parallel for
    for i in range(a.shape[0]):
        x = a[i]
        assert x == x
        out[i] = x, x * x, -x
