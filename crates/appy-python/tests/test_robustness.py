"""Long expressions, NFKC identifiers and race diagnostics through the package."""
import importlib.util
import sys
import threading

import numpy as np
import pytest

import appy

HEAD = "import numpy as np\nimport appy\n\n\n@appy.jit\n"


def load(tmp_path, name, src):
    """Imports `src`. CPython compiles a chain of a few thousand terms recursively
    (RecursionError at the default limit): the import runs on a thread with a large
    stack and a raised limit, as a program with such expressions must do itself."""
    path = tmp_path / (name + ".py")
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    failure = []

    def run():
        try:
            spec.loader.exec_module(mod)
        except BaseException as e:
            failure.append(e)

    limit, size = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(100000)
    threading.stack_size(512 << 20)
    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(size)
        sys.setrecursionlimit(limit)
    if failure:
        raise failure[0]
    return mod


def test_flat_sum_of_5000_terms(tmp_path):
    terms = ["a[i]"] + ["%s %d.5 * a[(i + %d) %% N]" % ("-" if k % 3 == 0 else "+", k % 7, k % 13) for k in range(1, 5000)]
    src = HEAD + "def k(a, out, N):\n    #pragma parallel for\n    for i in range(N):\n        out[i] = " + " ".join(terms) + "\n"
    mod = load(tmp_path, "long_sum", src)
    n = 37
    a = np.random.default_rng(1).uniform(-1, 1, n)
    out = np.zeros(n)
    mod.k(a, out, n)
    # The NumPy meaning, summed left to right as Python does.
    want = a.copy()
    for k in range(1, 5000):
        t = (k % 7 + 0.5) * a[(np.arange(n) + k % 13) % n]
        want = want - t if k % 3 == 0 else want + t
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-9)


def test_too_deep_is_a_compile_error(tmp_path):
    # A parallel loop: a function with nothing for APPy to compile would run as Python.
    src = HEAD + "def k(a, out, N):\n    #pragma parallel for\n    for i in range(N):\n        out[i] = " + " + ".join(["a[i]"] * 10001) + "\n"
    try:
        mod = load(tmp_path, "too_deep", src)
    except RecursionError:
        # CPython 3.12 and later refuse to compile such an expression themselves (a
        # fixed C recursion limit), so no program can reach appy with it there; appy's
        # own limit is also tested from Rust (tests/tests/suite/deep.rs).
        pytest.skip("this CPython cannot compile a 10,001-term expression")
    with pytest.raises(appy.CompileError, match="expression is too deep"):
        mod.k(np.ones(3), np.zeros(3), 3)


def test_nfkc_identifiers(tmp_path):
    src = HEAD + "def k(a, out, N):\n    for i in range(N):\n        \uff58 = a[i] * 2.0\n        out[i] = x + 1.0\n"
    mod = load(tmp_path, "nfkc", src)
    a = np.arange(5.0)
    out = np.zeros(5)
    mod.k(a, out, 5)
    assert out.tolist() == (a * 2 + 1).tolist()


def test_loop_carried_dependence_is_a_compile_error(tmp_path):
    src = HEAD + "def k(a, out, N):\n    #pragma parallel for\n    for i in range(1, N):\n        out[i] = out[i - 1] + a[i]\n"
    mod = load(tmp_path, "carried", src)
    with pytest.raises(appy.CompileError, match="loop-carried dependence on `out`"):
        mod.k(np.ones(4), np.zeros(4), 4)


def test_unsynchronised_update_warns(tmp_path, capfd):
    src = HEAD + "def k(idx, hist, N):\n    #pragma parallel for\n    for i in range(N):\n        hist[idx[i]] += 1\n"
    mod = load(tmp_path, "hist", src)
    idx = np.array([0, 1, 1, 2, 1])
    hist = np.zeros(3, dtype=np.int64)
    mod.k(idx, hist, 5)
    assert hist.tolist() == [1, 3, 1]
    err = capfd.readouterr().err
    assert "warning: `hist[idx[i]]` is updated without synchronisation" in err
    assert "#pragma atomic" in err
