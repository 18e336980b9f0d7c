"""Errors (item 5): compile errors at the user's file and line, runtime errors naming
the argument; nothing aborts the interpreter."""
import os

import numpy as np
import pytest

import appy
import kernels as K

HERE = os.path.dirname(os.path.abspath(__file__))


def line_of(path, marker):
    with open(path) as f:
        for k, ln in enumerate(f, 1):
            if marker in ln:
                return k, ln
    raise AssertionError(marker)


def test_compile_error_points_into_the_users_file():
    with pytest.raises(appy.CompileError) as ei:
        K.broken(np.zeros(4))
    e = ei.value
    assert isinstance(e, SyntaxError)
    path = os.path.join(HERE, "kernels.py")
    line, text = line_of(path, "ERROR-HERE")
    assert os.path.samefile(e.filename, path)
    assert e.lineno == line
    assert e.offset == text.index("undefined_name") + 1
    assert e.text.rstrip("\n") == text.rstrip("\n")
    msg = str(e)
    assert f"kernels.py:{line}:{e.offset}: error:" in msg
    assert "undefined_name" in msg
    # The function can still be called again (it fails again, cleanly).
    with pytest.raises(appy.CompileError):
        K.broken(np.zeros(4))


def test_nested_function_error_location():
    @appy.jit
    def inner(a):
        #pragma parallel for
        for i in range(a.shape[0]):
            a[i] = a[i] + nowhere_defined  # NESTED-ERROR

    with pytest.raises(appy.CompileError) as ei:
        inner(np.zeros(3))
    line, text = line_of(__file__, "NESTED-" + "ERROR")
    assert ei.value.lineno == line
    assert os.path.samefile(ei.value.filename, __file__)
    assert ei.value.offset == text.index("nowhere_defined") + 1
    assert text.strip() in str(ei.value)


def test_unsupported_dtype_names_the_parameter():
    with pytest.raises(appy.RuntimeError, match=r"argument `x` of `axpy`: arrays of datetime64\[ns\] .*expected float16, float32, float64, complex64, complex128, int8/16/32/64, uint8/16/32/64 or bool"):
        K.axpy(1.0, np.zeros(3, "M8[ns]"), np.zeros(3), 3)
    with pytest.raises(appy.RuntimeError, match=r"argument `y` of `axpy`: arrays of (float128|longdouble)"):
        K.axpy(1.0, np.zeros(3), np.zeros(3, np.longdouble), 3)
    # A complex array is taken; storing its values into a real array is the error.
    with pytest.raises(appy.CompileError, match="discards its imaginary part"):
        K.axpy(1.0, np.zeros(3, np.complex64), np.zeros(3), 3)


def test_unsupported_argument_type():
    with pytest.raises(appy.RuntimeError, match=r"argument `x` of `axpy`: cannot pass a `list` \(convert it with np.asarray\)"):
        K.axpy(1.0, [1.0, 2.0], np.zeros(2), 2)
    with pytest.raises(appy.RuntimeError, match="argument `N`"):
        K.axpy(1.0, np.zeros(2), np.zeros(2), 2**70)


def test_wrong_rank_is_a_compile_error():
    with pytest.raises(appy.CompileError) as ei:
        K.scale_rows(np.zeros(4), np.zeros(4))
    assert ei.value.lineno is not None and "kernels.py" in ei.value.filename


def test_wrong_number_of_arguments():
    with pytest.raises(TypeError, match="axpy"):
        K.axpy(1.0, np.zeros(2))


class _FakeCuda:
    """An object that claims to live in GPU memory."""
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f8", "data": (1 << 40, False), "version": 3, "strides": None}


def test_gpu_array_on_the_cpu_device_is_refused():
    with pytest.raises(appy.RuntimeError, match="GPU arrays were passed, but the device is `cpu`"):
        K.axpy(1.0, _FakeCuda(), np.zeros(4), 4)


@pytest.mark.skipif(appy.gpu_available(), reason="a GPU is present")
def test_no_gpu():
    a = np.zeros(4)
    appy.device("gpu")
    try:
        with pytest.raises(appy.RuntimeError, match="no usable GPU"):
            K.increment_by_1(a)
    finally:
        appy.device("cpu")
    appy.device("auto")  # auto falls back to the CPU
    try:
        K.increment_by_1(a)
        assert a.tolist() == [1.0] * 4
        with pytest.raises(appy.RuntimeError, match="GPU arrays were passed, but no CUDA driver"):
            K.axpy(1.0, _FakeCuda(), np.zeros(4), 4)
    finally:
        appy.device("cpu")


def test_bad_options():
    with pytest.raises(TypeError, match="unknown option"):
        appy.jit(fast=True)
    with pytest.raises(ValueError):
        appy.jit(device="tpu")
    with pytest.raises(ValueError):
        appy.device("tpu")


def test_checked_mode_raises_index_error_at_the_subscript():
    @appy.jit(boundscheck=True, device="cpu")
    def shift(a, b, n):
        #pragma parallel for
        for i in range(n):
            b[i] = a[i + 1]  # OOB-HERE

    a = np.random.default_rng(1).random(13) + 0.5
    b = np.ones(13)
    with pytest.raises(IndexError) as ei:
        shift(a, b, 13)
    line, text = line_of(__file__, "OOB-" + "HERE")
    col = text.index("a[i + 1]") + 1
    assert f"{os.path.basename(__file__)}:{line}:{col}: error: index " in str(ei.value), str(ei.value)
    assert "out of bounds for axis 0 with size 13" in str(ei.value)
    # In range: the NumPy meaning, negative indices included.
    shift(a, b, 12)
    assert np.array_equal(b[:12], a[1:])

    @appy.jit(boundscheck=True, device="cpu")
    def prev(a, b, n):
        for i in range(n):
            b[i] = a[i - 1]

    prev(a, b, 13)
    assert b[0] == a[-1] and np.array_equal(b[1:], a[:-1])


def test_integer_division_by_zero_warns_once_like_numpy():
    @appy.jit(device="cpu")
    def divs(a, b, q):
        #pragma parallel for
        for i in range(a.shape[0]):
            q[i] = a[i] // b[i]  # DIV-HERE

    a = np.array([7, -7, 5, 9], dtype=np.int64)
    b = np.array([2, 2, 0, 0], dtype=np.int64)
    q = np.full(4, 3, dtype=np.int64)
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in floor_divide"):
        divs(a, b, q)
    with np.errstate(divide="ignore"):
        assert np.array_equal(q, a // b)


def test_a_broken_assume_clause_raises_value_error_at_the_clause():
    @appy.jit(device="cpu")
    def rowsum(a, out):
        #pragma parallel for transform(assume(j, multiple=8), split(j, 4, inner=unr))
        for i in range(a.shape[0]):
            s = 0.0
            for j in range(a.shape[1]):
                s += a[i, j]
            out[i] = s

    a = np.random.default_rng(2).random((5, 16)) + 0.5
    out = np.zeros(5)
    rowsum(a, out)
    assert np.allclose(out, a.sum(1))
    with pytest.raises(ValueError) as ei:
        rowsum(a[:, :12].copy(), out)
    line, text = line_of(__file__, "transform(assume(j, multiple" + "=8)")
    col = text.index("assume(") + 1
    assert f"{os.path.basename(__file__)}:{line}:{col}: error: the assumption does not hold" in str(ei.value), str(ei.value)
    assert "runs 12 iterations, not a multiple of 8" in str(ei.value)
