"""APPy's allocation helpers, ``import appy.np_shared as nps``, with APPy's names and
signatures: ``empty``, ``empty_like``, ``zeros``, ``copy`` and ``randn``.

APPy allocates these arrays in memory that Apple's Metal GPU shares with the CPU. appy
needs no special allocation: any NumPy array is used in place on the CPU back end, and
on an NVIDIA GPU the elements a kernel touches move to the device and back as needed
(docs/PYTHON.md). So these return ordinary NumPy arrays. Inside a jitted function,
``nps.empty``, ``nps.zeros``, ``nps.empty_like`` and ``nps.copy`` are ``np.empty``,
``np.zeros``, ``np.empty_like`` and ``np.copy``."""
from typing import Any, Optional

import numpy as np

__all__ = ["empty", "empty_like", "zeros", "copy", "randn", "has_device_buffer", "get_device_buffer"]

_rng = np.random.default_rng()


def empty(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """A new uninitialised C-ordered array (``np.empty``)."""
    return np.empty(shape, dtype=dtype)


def empty_like(x: np.ndarray, dtype: Optional[Any] = None) -> np.ndarray:
    """A new uninitialised C-ordered array of ``x``'s shape, and of its dtype unless
    ``dtype`` is given."""
    return np.empty(x.shape, dtype=dtype or x.dtype)


def zeros(shape: Any, dtype: Any = np.float64) -> np.ndarray:
    """A new array of zeros (``np.zeros``)."""
    return np.zeros(shape, dtype=dtype)


def copy(x: np.ndarray) -> np.ndarray:
    """A C-ordered copy of ``x``."""
    out = empty_like(x)
    out[...] = x
    return out


def randn(*shape: int, dtype: Any = np.float64) -> np.ndarray:
    """Standard normal samples of ``shape`` (float32 or float64), as APPy draws them."""
    out = empty(shape, dtype=dtype)
    _rng.standard_normal(shape, dtype=dtype, out=out)
    return out


def has_device_buffer(x: Any) -> bool:
    """APPy: whether ``x`` was allocated in Metal's shared memory. appy allocates no such
    buffers: always False."""
    return False


def get_device_buffer(x: Any) -> Any:
    """APPy: the Metal buffer behind ``x``. appy has none: a ``KeyError``, as APPy
    raises for an array it did not allocate."""
    raise KeyError("appy.np_shared: appy does not allocate device buffers; the array itself is passed to jitted functions")
