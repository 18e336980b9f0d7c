"""appy: APPy's annotated Python compiled through MLIR for NVIDIA GPUs and the CPU.

    import numpy as np
    import appy

    @appy.jit
    def vector_add(a, b, c, N):
        #pragma parallel for simd
        for i in range(N):
            c[i] = a[i] + b[i]

    vector_add(a, b, c, len(a))   # NumPy arrays updated in place; torch/CuPy GPU arrays too

Names: ``jit``, ``shader``, ``cpu_shader``, ``prange``, ``vidx``, ``MVL``, ``buffer``, ``where``, ``atomic_add/max/min``, ``mv``,
``transpose``, the math functions (``from appy import exp``), ``device()``,
``gpu_available()``, ``CompileError``, ``RuntimeError``, ``DeviceArray``.

Environment: ``APPY_DISABLE_JIT=1`` runs functions as plain Python; ``APPY_DEVICE``
(cpu/gpu/auto) is the default device; ``APPY_LOG`` (e.g. ``debug``) the level of the
compiler's messages, which go to the logger ``appy``; ``APPY_CACHE_DIR`` the compile
cache (``~/.cache/appy``; empty disables it); ``APPY_AUTOTUNE=0`` turns GPU autotuning
off.
"""
from ._errors import CompileError, RuntimeError
from ._jit import disabled as _disabled
from ._jit import cpu_shader, jit, shader
from ._names import (MVL, abs, absolute, arctan, arctan2, atan, atomic_add, atomic_max,
                     atomic_min, buffer, ceil, cos, exp, exp2, fabs, floor, fmax, fmin, log, log2,
                     log10, maximum, minimum, mv, power, prange, sin, sqrt, tan, tanh,
                     transpose, vidx, where)

__all__ = [
    "jit", "shader", "cpu_shader", "prange", "vidx", "MVL", "buffer", "where", "atomic_add", "atomic_max", "atomic_min",
    "mv", "transpose", "exp", "exp2", "log", "log2", "log10", "sqrt", "sin", "cos", "tan",
    "tanh", "arctan", "atan", "arctan2", "floor", "ceil", "abs", "absolute", "fabs",
    "maximum", "minimum", "fmax", "fmin", "power", "device", "gpu_available",
    "CompileError", "RuntimeError", "DeviceArray",
]

try:
    from . import _native
    from ._native import DeviceArray
    __version__ = _native.__version__
    # No background compiler may be inside LLVM when the process exits.
    import atexit as _atexit
    _atexit.register(_native.shutdown_compilers)
except ImportError:  # only usable with APPY_DISABLE_JIT=1
    if not _disabled():
        raise
    _native = None
    DeviceArray = None
    __version__ = "0.1.0"


def _numpy_blas():
    """NumPy's bundled OpenBLAS with 64-bit integers (``numpy.libs/libscipy_openblas64_*``),
    which the CPU back end calls for matrix products unless ``APPY_LIBBLAS`` names
    another library."""
    import glob
    import os
    try:
        import numpy
    except ImportError:
        return None
    libs = os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)), "numpy.libs")
    found = sorted(glob.glob(os.path.join(libs, "libscipy_openblas64_*.so*")))
    return found[0] if found else None


if _native is not None:
    _blas = _numpy_blas()
    if _blas is not None:
        _native.prefer_blas(_blas)
    import os as _os
    import sys as _sys
    # A wheel (scripts/wheel.sh) ships LLVM's OpenMP runtime (the CPU back end's parallel
    # loops) in _vendor/; APPY_LIBOMP still takes precedence, the system's copies come
    # after it. A wheel never looks for libdevice in the tree it was built from.
    _omp = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "_vendor", "libomp.so.5")
    _packaged = _os.path.isfile(_omp)
    if _packaged:
        _native.register_libomp(_omp)
    # NVIDIA's pip packages (libdevice for GPU math functions) are found on sys.path.
    _native.register_site_dirs([p for p in _sys.path if isinstance(p, str) and p], _packaged)


def device(name=None):
    """Sets (``appy.device('cpu' | 'gpu' | 'auto')``) or returns (``appy.device()``) the
    default device of calls. ``auto`` (the default, or ``$APPY_DEVICE``) uses the GPU
    when a CUDA driver and a device are present, else the CPU; ``gpu`` makes a missing
    GPU an error (``appy.RuntimeError``). GPU arrays as arguments always run on the GPU.
    A function's own ``@appy.jit(device=...)`` takes precedence."""
    if _native is None:
        return "cpu" if name is None else None
    if name is None:
        return _native.get_device()
    _native.set_device(name)
    return None


def gpu_available():
    """Whether a CUDA driver and a GPU can be used."""
    return _native is not None and _native.gpu_available()
