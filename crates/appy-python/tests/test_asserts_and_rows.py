"""`assert` in jitted functions (an AssertionError located at the statement) and tuples
stored into rows (a row of another length is NumPy's ValueError)."""
import numpy as np
import pytest

import appy


@appy.jit
def check_positive(a):
    #pragma parallel for
    for i in range(a.shape[0]):
        assert a[i] > 0, "positive"


def test_assert_fails_with_assertion_error():
    check_positive(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(AssertionError, match="AssertionError"):
        check_positive(np.array([1.0, -1.0, 3.0]))


@appy.jit
def rgb(out):
    #pragma parallel for
    for i in range(out.shape[0]):
        out[i] = 1, 2, 3


def test_tuple_rows():
    out = np.zeros((5, 3))
    rgb(out)
    assert (out == [1, 2, 3]).all()
    with pytest.raises(ValueError, match="could not broadcast input array from shape \\(3,\\) into shape \\(4,\\)"):
        rgb(np.zeros((5, 4)))


@appy.cpu_shader
def shader_hello():
    out = np.empty((10, 12, 4), dtype=np.uint8)
    for i in range(10):
        for j in range(12):
            out[i, j] = 255, 255, 255, 255
    assert out[9, 11, 3] == 255
    return out


def test_shader_writes_rows():
    assert (shader_hello() == 255).all()
