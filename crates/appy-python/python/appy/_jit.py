"""``@appy.jit``: the decorator and the function object it returns."""
import functools
import inspect
import linecache
import os
import re
import types
import warnings

_OPTIONS = {
    "auto_simd": "tensor statements get `simd` on their last dimension",
    "dump_code": "print the generated code (PTX on the GPU, LLVM IR on the CPU) when compiling",
    "device": "'cpu', 'gpu' or 'auto' for this function (default: appy.device())",
    "boundscheck": "check every array subscript: an index out of bounds raises IndexError naming it (also APPY_BOUNDS_CHECK=1)",
    "backend": "accepted for compatibility with APPy (ignored)",
    # APPy's own options, each doing the nearest honest thing here:
    "dry_run": "compile each specialisation (errors and dumped code as usual), then run the original Python function instead of the compiled code",
    "dump_code_to_file": "a path: the generated code of each compilation is written there",
    "verbose_static_rewrite": "print the source as the compiler reads it (after appy's static rewriting) when the function is decorated",
    "verbose_block_loop": "print, at each compilation, how the parallel loops were blocked (kernels, vector lengths)",
    "clear_cache": "accepted for compatibility with APPy, whose Metal and Numba back ends then recompile instead of reusing their code cache; appy's caches are keyed by the function's source, its options and the compiler's version, so they never hold stale code and there is nothing to clear",
    "shader": "APPy's individual mode (what @appy.shader sets): the function's top-level range loops, and a range loop that is the whole body of one, are parallel",
}


def _path_or_none(p):
    """``dump_code_to_file``: a path (``str`` or ``os.PathLike``), or None/False."""
    if p is None or p is False:
        return None
    return os.fspath(p)


def disabled():
    """Whether ``APPY_DISABLE_JIT`` is set (functions then run as plain Python)."""
    return os.environ.get("APPY_DISABLE_JIT", "") not in ("", "0")


def jit(fn=None, **options):
    """Compiles a function written in APPy's annotated Python (``#pragma`` comments,
    ``appy.prange``, tensor statements, ``appy.vidx``): ``@appy.jit`` or
    ``@appy.jit(auto_simd=True, ...)``.

    The first call with a new argument signature (dtypes and ranks of arrays, kinds of
    scalars) compiles a specialisation, on the GPU when there is one (see
    ``appy.device``), else for the CPU; later calls with that signature run it at once.
    NumPy arrays are updated in place; GPU arrays (CuPy, PyTorch, JAX, Numba) are used
    in place without copies. Options: ``auto_simd``, ``dump_code``, ``device``,
    ``boundscheck``, and APPy's ``backend`` (ignored), ``dry_run``,
    ``dump_code_to_file``, ``verbose_static_rewrite``, ``verbose_block_loop`` and
    ``clear_cache`` (``appy.jit.options`` says what each does). An option neither has is a ``TypeError``.

    With ``APPY_DISABLE_JIT=1`` the function is returned unchanged and runs as plain
    Python on NumPy (its sequential meaning)."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        known = ", ".join(sorted(_OPTIONS))
        raise TypeError(f"appy.jit: unknown option(s) {', '.join(unknown)} (known: {known})")
    if "device" in options and options["device"] not in (None, "cpu", "gpu", "auto"):
        raise ValueError(f"appy.jit: device must be 'cpu', 'gpu' or 'auto', not {options['device']!r}")
    if fn is None:
        return lambda f: jit(f, **options)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"appy.jit expects a function, got {type(fn).__name__}")
    if disabled():
        return fn
    return Dispatcher._create(fn, options)


#: Every option of ``@appy.jit`` and what it does.
jit.options = dict(_OPTIONS)


def shader(fn=None, **options):
    """APPy's individual mode: ``@appy.shader`` is ``@appy.jit(shader=True)``. The
    function's top-level ``for ... in range(...)`` loops run in parallel, one iteration
    per thread on the GPU, as if each had ``#pragma parallel for`` above it; so does a
    ``range`` loop that is the whole body of one (a 2-D grid). Loops inside them stay
    sequential. A loop whose iterations conflict is a compile error, as with the pragma."""
    options["shader"] = True
    return jit(fn, **options)


def cpu_shader(fn=None, **options):
    """``@appy.shader`` on the CPU back end (APPy runs it through Numba): ``@appy.jit(
    shader=True, device='cpu')``."""
    options.setdefault("device", "cpu")
    return shader(fn, **options)


_IMPORT = re.compile(r"(import|from)[ \t\\(.]")


def _source(fn, auto_simd, boundscheck=False, shader=False):
    """The text the compiler reads for ``fn``: the user's file with the same lines, where
    only the module-level imports and the function remain (the function dedented if it
    is nested, its decorators replaced by ``@appy.jit``), so that every location the
    compiler reports is a location in the user's file. Returns (filename, text,
    real_text, indent, first_line, last_line) or None when the source is unavailable."""
    try:
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    all_lines = linecache.getlines(filename, fn.__globals__)
    if not all_lines:
        all_lines = ["\n"] * (start - 1) + list(lines)
    start = max(start, 1)
    real_text = "".join(all_lines)
    out = ["\n" if ln.endswith("\n") else "" for ln in all_lines]
    # Module-level imports (with their continuation lines).
    i = 0
    while i < len(all_lines):
        ln = all_lines[i]
        if _IMPORT.match(ln):
            depth = 0
            while True:
                out[i] = all_lines[i]
                depth += all_lines[i].count("(") - all_lines[i].count(")")
                cont = all_lines[i].rstrip().endswith("\\") or depth > 0
                i += 1
                if not cont or i >= len(all_lines):
                    break
            continue
        i += 1
    # The function: decorators blanked, `@appy.jit` just above the `def`.
    first = start - 1
    last = first + len(lines) - 1
    d = first
    while d <= last and not re.match(r"\s*(async\s+)?def\s", all_lines[d]):
        d += 1
    if d > last:
        return None
    def_line = all_lines[d]
    indent = len(def_line) - len(def_line.lstrip(" \t"))
    for k in range(d, last + 1):
        ln = all_lines[k]
        head = ln[:indent]
        out[k] = ln[indent:] if head.strip() == "" else ln.lstrip(" \t")
    if d == 0:
        return None
    # The module's functions that it calls (and those they call): the compiler inlines
    # them. Their decorators are blanked; a jitted helper is compiled as its source.
    for h_first, h_def, h_last in _helpers(fn, filename):
        if h_last < first - 1 or h_first > last:
            for k in range(h_def, h_last + 1):
                out[k] = all_lines[k]
    _blank_defaults(out, d, last)
    opts = [k for k, on in (("auto_simd", auto_simd), ("boundscheck", boundscheck), ("shader", shader)) if on]
    deco = "@appy.jit(" + ", ".join(f"{k}=True" for k in opts) + ")\n" if opts else "@appy.jit\n"
    out[d - 1] = deco
    # Lines from the decorator up to the last line, 1-based, for locations.
    return filename, "".join(out), real_text, indent, d + 1, last + 1


def _helpers(fn, filename):
    """The module-level functions of ``filename`` that ``fn`` calls by name, directly or
    through each other: (first line, ``def`` line, last line) of each, 0-based."""
    import types
    seen, out, todo = set(), [], [fn]
    while todo:
        f = todo.pop()
        for name in f.__code__.co_names:
            g = f.__globals__.get(name)
            g = getattr(g, "py_func", g)
            if not isinstance(g, types.FunctionType) or g is fn or id(g) in seen:
                continue
            seen.add(id(g))
            if g.__qualname__ != g.__name__ or g.__name__ != name:
                continue  # nested, or bound under another name: not the file's `def`
            try:
                if (inspect.getsourcefile(g) or inspect.getfile(g)) != filename:
                    continue
                lines, start = inspect.getsourcelines(g)
            except (OSError, TypeError):
                continue
            first = start - 1
            d = next((k for k, ln in enumerate(lines) if re.match(r"(async\s+)?def\s", ln)), None)
            if d is None or lines[d][:1].isspace():
                continue
            out.append((first, first + d, first + len(lines) - 1))
            todo.append(g)
    return out


def _blank_defaults(out, d, last):
    """Default values are bound in Python (``Dispatcher._bind``): the compiler sees
    ``def f(a, v    ):`` for ``def f(a, v=1.0):`` (spaces keep every column)."""
    import ast
    try:
        tree = ast.parse("".join(out[d:last + 1]))
    except SyntaxError:
        return
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef):
        return
    params = fdef.args.posonlyargs + fdef.args.args
    for p, dflt in zip(params[len(params) - len(fdef.args.defaults):], fdef.args.defaults):
        if p.end_lineno != dflt.end_lineno:
            continue  # a default spanning lines: left to the compiler's message
        k = d + p.end_lineno - 1
        ln = out[k]
        # Columns are UTF-8 byte offsets.
        b = ln.encode()
        b = b[:p.end_col_offset] + b" " * (dflt.end_col_offset - p.end_col_offset) + b[dflt.end_col_offset:]
        out[k] = b.decode()


class Dispatcher:
    """Placeholder replaced below by a subclass of the native Kernel (kept importable
    without the extension under APPY_DISABLE_JIT)."""


#: Arguments only Python takes (a function with nothing to compile then runs as Python).
_PYTHON_ONLY = (list, tuple, dict, set, str, bytes)

#: What makes a function something for APPy to compile: a pragma or a ``prange`` loop.
_PARALLEL = re.compile(r"#\s*pragma\b|\bprange\b")


def _make_dispatcher():
    from . import _native
    from ._errors import CompileError

    class Dispatcher(_native.Kernel):
        """An ``@appy.jit`` function: call it like the original function.

        ``py_func`` is the original function, ``signatures()`` lists the compiled
        specialisations."""

        @classmethod
        def _create(cls, fn, options):
            sig = inspect.signature(fn)
            params = []
            for p in sig.parameters.values():
                if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    raise TypeError(f"appy.jit: `{fn.__name__}` has a parameter `{p}`; only positional parameters are supported")
                params.append(p.name)
            src = _source(fn, bool(options.get("auto_simd")), bool(options.get("boundscheck")),
                          bool(options.get("shader")))
            try:
                fallback_file = inspect.getsourcefile(fn) or fn.__code__.co_filename
            except TypeError:
                fallback_file = fn.__code__.co_filename
            extra = dict(dump_code=bool(options.get("dump_code")),
                         dump_code_to_file=_path_or_none(options.get("dump_code_to_file")),
                         dry_run=bool(options.get("dry_run")),
                         verbose_block_loop=bool(options.get("verbose_block_loop")))
            if src is None:
                self = cls(fn.__name__, params, fallback_file, device=options.get("device"), **extra)
            else:
                filename, text, real, indent, first, last = src
                body = "\n".join(text.splitlines()[first - 1:last])
                if cls is Dispatcher and not options.get("shader") and not _PARALLEL.search(body):
                    cls = PythonFallback
                self = cls(fn.__name__, params, filename, text, real, indent, first, last,
                           options.get("device"), **extra)
                if options.get("verbose_static_rewrite"):
                    print(f"[appy] `{fn.__name__}` as the compiler reads it ({filename}:{first}):\n{body}")
            functools.update_wrapper(self, fn)
            self.py_func = fn
            self._signature = sig
            self._options = dict(options)
            return self

        def _bind(self, args, kwargs):
            """The positional arguments of a call with keywords or defaults."""
            try:
                b = self._signature.bind(*args, **(kwargs or {}))
            except TypeError as e:
                raise TypeError(f"{self.__name__}(): {e}") from None
            b.apply_defaults()
            return tuple(b.arguments.values())

        def __get__(self, obj, objtype=None):
            if obj is None:
                return self
            return types.MethodType(self, obj)

        def __repr__(self):
            return f"<appy.jit function {self.__qualname__}>"

    class PythonFallback(Dispatcher):
        """A jitted function with nothing for APPy to compile (no parallel loop: no
        ``#pragma``, no ``prange``). appy compiles it all the same; if it cannot, the
        function runs as plain Python, as APPy runs it, with one ``RuntimeWarning``."""

        _python_only = False

        def __call__(self, *args, **kwargs):
            if self._python_only:
                return self.py_func(*args, **kwargs)
            # Python containers and strings are no array appy can pass: the call is
            # Python's (nothing has run yet).
            odd = next((a for a in (*args, *kwargs.values()) if isinstance(a, _PYTHON_ONLY)), None)
            if odd is not None:
                return self._fall_back(f"a `{type(odd).__name__}` argument", args, kwargs)
            try:
                return Dispatcher.__call__(self, *args, **kwargs)
            except CompileError as e:
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                return self._fall_back(first, args, kwargs)

        def _fall_back(self, why, args, kwargs):
            if not self._python_only:
                self._python_only = True
                warnings.warn(
                    f"appy: `{self.__name__}` has no parallel loop and appy cannot compile it "
                    f"({why}); it runs as plain Python, as APPy runs a function without "
                    "parallel loops", RuntimeWarning, stacklevel=3)
            return self.py_func(*args, **kwargs)

    return Dispatcher


if not disabled():
    try:
        Dispatcher = _make_dispatcher()  # noqa: F811
    except ImportError:  # pragma: no cover - only without the built extension
        pass
