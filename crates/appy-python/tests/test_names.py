"""APPy's names (item 2) and APPY_DISABLE_JIT."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import appy
from conftest import pythonpath

HERE = os.path.dirname(os.path.abspath(__file__))


def test_names_exist():
    for n in ["jit", "prange", "vidx", "MVL", "where", "atomic_add", "atomic_max", "atomic_min",
              "exp", "log", "sqrt", "tanh", "sin", "cos", "maximum", "minimum", "mv",
              "CompileError", "RuntimeError", "device", "gpu_available"]:
        assert hasattr(appy, n), n
    from appy import exp, sqrt  # noqa: F401
    assert appy.exp is np.exp


def test_sequential_meaning_of_the_names():
    assert list(appy.prange(3)) == [0, 1, 2]
    assert appy.vidx(8, 4, 10).tolist() == [8, 9]
    a = np.zeros(3)
    appy.atomic_add(a, np.array([0, 0, 2]), 1.0)
    assert a.tolist() == [2.0, 0.0, 1.0]
    appy.atomic_max(a, 1, 5.0)
    appy.atomic_min(a, 0, -1.0)
    assert a.tolist() == [-1.0, 5.0, 1.0]
    assert appy.where(np.array([True, False]), 1, 2).tolist() == [1, 2]


def test_disable_jit_runs_plain_python():
    code = textwrap.dedent("""
        import numpy as np, appy, kernels as K
        assert K.axpy.__class__.__name__ == "function", type(K.axpy)
        x = np.arange(5.0); y = np.ones(5)
        K.axpy(2.0, x, y, 5)
        assert y.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]
        A = np.arange(12.0); B = -A; C = np.zeros(12)
        K.blend(A, B, C, 12)
        assert (C == A).all()
        h = np.zeros(3); K.histogram(np.array([0, 2, 2]), h)
        assert h.tolist() == [1.0, 0.0, 2.0]
        print("plain", appy.device())
    """)
    env = dict(os.environ, APPY_DISABLE_JIT="1", PYTHONPATH=pythonpath(HERE))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=HERE)
    assert p.returncode == 0, p.stderr
    assert "plain" in p.stdout
