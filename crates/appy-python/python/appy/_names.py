"""APPy's names as plain Python on NumPy: what the source means sequentially. Inside a
compiled function the compiler gives them their parallel meaning; outside (and under
``APPY_DISABLE_JIT=1``) they run as written here."""
import numpy as np

#: The vector length of ``appy.vidx`` blocks. Correct programs compute the same result
#: for any value; the compiler picks its own (autotuned on the GPU).
MVL = 256

#: A parallel ``for`` loop (``for i in appy.prange(N):``); sequentially, ``range``.
prange = range


def vidx(start, length, bound=None):
    """The indices ``start, ..., min(start + length, bound) - 1`` of one vector block."""
    stop = start + length if bound is None else min(start + length, bound)
    return np.arange(start, stop)


def buffer(size, dtype=np.float64):
    """A scratchpad of ``size`` elements for one iteration of a parallel loop (APPy's
    group mode; the group's shared memory on the GPU): uninitialised, like
    ``np.empty``. ``size`` must be a constant."""
    return np.empty(size, dtype=dtype)


def where(cond, x, y):
    """Element-wise ``x if cond else y``."""
    return np.where(cond, x, y)


def atomic_add(a, index, value):
    """``a[index] += value`` (repeated indices accumulate)."""
    np.add.at(a, index, value)


def atomic_max(a, index, value):
    """``a[index] = max(a[index], value)``."""
    np.maximum.at(a, index, value)


def atomic_min(a, index, value):
    """``a[index] = min(a[index], value)``."""
    np.minimum.at(a, index, value)


def mv(A, x):
    """Matrix-vector product."""
    return A @ x


def transpose(a):
    """Reverses the axes."""
    return np.transpose(a)


# Math, as NumPy's ufuncs (``from appy import exp``).
exp = np.exp
exp2 = np.exp2
log = np.log
log2 = np.log2
log10 = np.log10
sqrt = np.sqrt
sin = np.sin
cos = np.cos
tan = np.tan
tanh = np.tanh
arctan = np.arctan
atan = np.arctan
arctan2 = np.arctan2
floor = np.floor
ceil = np.ceil
abs = np.abs
absolute = np.absolute
fabs = np.fabs
maximum = np.maximum
minimum = np.minimum
fmax = np.fmax
fmin = np.fmin
power = np.power
