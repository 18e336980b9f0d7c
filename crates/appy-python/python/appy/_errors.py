"""The exceptions of the `appy` package."""
import builtins


class CompileError(SyntaxError):
    """A function could not be compiled. ``filename`` and ``lineno`` (and ``offset``)
    point into the user's file; the message is the located diagnostic
    (``FILE:LINE:COL: error: ...``, the source line, a caret, and help notes)."""


class RuntimeError(builtins.RuntimeError):
    """A call failed: no GPU when device 'gpu' was asked for, out of memory, an argument
    of a type, dtype or layout that cannot be passed, a failure on the device."""
