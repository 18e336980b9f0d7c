"""Whole-program differential fuzzing (``tests/wholeprog``): generated APPy programs run
under CPython + NumPy and under appy, compared (``tests/wholeprog/compare.py``).

(a) every minimal failing program found so far (``tests/wholeprog/regressions/*.py``) is
    checked the way the fuzzer checks a program: compiled and compared for each call
    signature of its meta line, called from several threads at once, and reloaded from
    the persistent cache in a second process;
(b) a CI slice of the fuzzer: a fixed seed, ``APPY_WHOLEPROG_CASES`` programs (300 by
    default), ``--jobs 2``.

Nothing here is marked xfail: a failure is a bug in appy (or in the generator) to fix.
"""
import glob
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
WHOLEPROG = os.path.join(REPO, "tests", "wholeprog")
sys.path.insert(0, WHOLEPROG)

import fuzz  # noqa: E402

REGRESSIONS = sorted(glob.glob(os.path.join(WHOLEPROG, "regressions", "*.py")))
SEED = 20261124


@pytest.mark.parametrize("path", REGRESSIONS, ids=[os.path.basename(p) for p in REGRESSIONS])
def test_regression_program(path, capsys):
    rc = fuzz.main(["--files", path, "--jobs", "1", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out


def test_fuzzer_slice(capsys):
    count = fuzz.ci_count()
    rc = fuzz.main(["--seed", str(SEED), "--count", str(count), "--jobs", "2",
                    "--phase2", str(max(count // 5, 1)), "--quiet"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
