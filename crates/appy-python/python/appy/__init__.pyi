# Type stubs of appy's public names (editors complete and check them; the package ships
# `py.typed`). The runtime definitions are in __init__.py, _jit.py and _names.py.
from typing import Any, Callable, Literal, Optional, TypeVar, overload

import numpy as np

__version__: str

_F = TypeVar("_F", bound=Callable[..., Any])
_Device = Literal["cpu", "gpu", "auto"]

@overload
def jit(fn: _F) -> _F: ...
@overload
def jit(
    fn: None = ...,
    *,
    auto_simd: bool = ...,
    dump_code: bool = ...,
    device: Optional[_Device] = ...,
    boundscheck: bool = ...,
    backend: str = ...,
    dry_run: bool = ...,
    dump_code_to_file: Optional[str] = ...,
    verbose_static_rewrite: bool = ...,
    verbose_block_loop: bool = ...,
    clear_cache: bool = ...,
    shader: bool = ...,
) -> Callable[[_F], _F]: ...
@overload
def shader(fn: _F) -> _F: ...
@overload
def shader(fn: None = ..., **options: Any) -> Callable[[_F], _F]: ...
@overload
def cpu_shader(fn: _F) -> _F: ...
@overload
def cpu_shader(fn: None = ..., **options: Any) -> Callable[[_F], _F]: ...

MVL: int
prange = range

def vidx(start: int, length: int, bound: Optional[int] = ...) -> np.ndarray: ...
def buffer(size: int, dtype: Any = ...) -> np.ndarray: ...
def where(cond: Any, x: Any, y: Any) -> Any: ...
def atomic_add(a: np.ndarray, index: Any, value: Any) -> None: ...
def atomic_max(a: np.ndarray, index: Any, value: Any) -> None: ...
def atomic_min(a: np.ndarray, index: Any, value: Any) -> None: ...
def mv(A: Any, x: Any) -> Any: ...
def transpose(a: Any) -> Any: ...

exp: np.ufunc
exp2: np.ufunc
log: np.ufunc
log2: np.ufunc
log10: np.ufunc
sqrt: np.ufunc
sin: np.ufunc
cos: np.ufunc
tan: np.ufunc
tanh: np.ufunc
arctan: np.ufunc
atan: np.ufunc
arctan2: np.ufunc
floor: np.ufunc
ceil: np.ufunc
abs: np.ufunc
absolute: np.ufunc
fabs: np.ufunc
maximum: np.ufunc
minimum: np.ufunc
fmax: np.ufunc
fmin: np.ufunc
power: np.ufunc

@overload
def device(name: None = ...) -> _Device: ...
@overload
def device(name: _Device) -> None: ...
def gpu_available() -> bool: ...

class CompileError(SyntaxError): ...
class RuntimeError(RuntimeError): ...  # noqa: A001 (appy.RuntimeError subclasses the builtin)

class DeviceArray:
    """A GPU array appy made (a result), exchanged through DLPack."""
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def ptr(self) -> int: ...
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...
    def __dlpack__(self, stream: Any = ...) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
