"""APPy's own ``@appy.jit`` options (habanero-lab/APPy ``set_default_options``): each is
accepted and does the nearest honest thing; an option neither APPy nor appy has is
still a ``TypeError``."""
import numpy as np
import pytest

import appy


# As APPy's tests/integration/triton/tutorial/test_global_reduction.py writes it.
@appy.jit(backend="triton", dump_code=True, dry_run=0, device="cpu")
def vec_sum(a):
    sum = 0.0
    #pragma parallel for simd shared(sum)
    for i in range(a.shape[0]):
        sum += a[i]
    return sum


def test_appy_global_reduction_options(capsys):
    a = np.random.default_rng(3).random(1009)
    assert np.allclose(vec_sum(a), a.sum())
    assert "llvm.func" in capsys.readouterr().out  # dump_code printed the code


def test_dry_run_compiles_then_runs_python(capsys):
    calls = []

    def trace(x):
        calls.append(x)
        return x

    @appy.jit(dry_run=True, device="cpu", verbose_block_loop=True)
    def scale(a, b, n):
        #pragma parallel for
        for i in range(n):
            b[i] = 2.0 * a[i] + 1.0

    a = np.random.default_rng(5).random(13)
    b = np.zeros(13)
    scale(a, b, 13)
    assert np.array_equal(b, 2.0 * a + 1.0)
    assert scale.signatures() == ["cpu(float64[:], float64[:], int)"]  # it was compiled
    assert "[appy] scale(float64[:], float64[:], int) for the CPU" in capsys.readouterr().out

    # The Python function ran: a call of a plain Python helper would not compile, so
    # dry_run still reports the compile error first.
    @appy.jit(dry_run=True, device="cpu")
    def bad(a, n):
        #pragma parallel for
        for i in range(n):
            a[i] = trace(a[i])

    with pytest.raises(appy.CompileError):
        bad(np.ones(3), 3)
    assert calls == []


def test_dump_code_to_file(tmp_path):
    out = tmp_path / "code.txt"

    @appy.jit(dump_code_to_file=out, device="cpu")
    def add(a, b, n):
        #pragma parallel for
        for i in range(n):
            b[i] = a[i] + 1.0

    a = np.arange(7.0)
    b = np.zeros(7)
    add(a, b, 7)
    assert np.array_equal(b, a + 1.0)
    assert "llvm.func" in out.read_text()


def test_verbose_static_rewrite_prints_the_source(capsys):
    @appy.jit(verbose_static_rewrite=True, device="cpu")
    def neg(a, n):
        #pragma parallel for
        for i in range(n):
            a[i] = -a[i]

    out = capsys.readouterr().out
    assert "[appy] `neg` as the compiler reads it" in out and "a[i] = -a[i]" in out


def test_unknown_options_are_still_refused():
    with pytest.raises(TypeError, match="unknown option"):
        appy.jit(dry_runn=True)
    assert set(appy.jit.options) >= {"dry_run", "dump_code_to_file", "verbose_static_rewrite", "verbose_block_loop", "backend"}
