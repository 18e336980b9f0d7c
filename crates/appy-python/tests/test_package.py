"""What a package on PyPI has: ``python -m appy --version`` and ``doctor``, type stubs
covering the public names, and libdevice found without ``APPY_LIBDEVICE``."""
import ast
import os
import subprocess
import sys

import appy


def run(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    e = {k: v for k, v in e.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "appy", *args], capture_output=True, text=True, env=e, timeout=120)


def test_version():
    r = run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"appy {appy.__version__}"
    assert appy.__version__.count(".") == 2


def test_doctor_lists_what_it_found():
    r = run("doctor")
    assert r.returncode == 0, r.stderr
    keys = [line.split("  ")[0].strip() for line in r.stdout.splitlines()]
    assert keys == ["appy", "CPU back end", "OpenMP", "BLAS", "GPU", "libdevice", "cache"], r.stdout
    r = run("doctor", env={"APPY_LIBDEVICE": "none"})
    line = [l for l in r.stdout.splitlines() if l.startswith("libdevice")][0]
    assert "turned off" in line and "pip install nvidia-cuda-nvcc-cu12" in line, line


def test_usage_error():
    r = run("frobnicate")
    assert r.returncode == 2 and "usage: python -m appy" in r.stderr


def test_stubs_cover_the_public_names():
    d = os.path.dirname(appy.__file__)
    assert os.path.isfile(os.path.join(d, "py.typed"))
    tree = ast.parse(open(os.path.join(d, "__init__.pyi")).read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    missing = set(appy.__all__) - names
    assert not missing, f"names without stubs: {sorted(missing)}"


def test_wheel_ships_openmp_and_leaves_its_build_tree():
    """A wheel (scripts/wheel.sh) carries LLVM's OpenMP runtime and uses it, and finds
    libdevice only on the user's machine, never in the checkout it was built from."""
    d = os.path.dirname(os.path.abspath(appy.__file__))
    omp = os.path.join(d, "_vendor", "libomp.so.5")
    if not os.path.isfile(omp):
        import pytest
        pytest.skip("installed from source: the system's OpenMP runtime is used")
    r = run("doctor", env={"APPY_LIBOMP": None, "APPY_LIBDEVICE": None})
    assert r.returncode == 0, r.stderr
    lines = dict((l.split("  ")[0].strip(), l) for l in r.stdout.splitlines())
    assert omp in lines["OpenMP"], r.stdout
    assert "development copy" not in lines["libdevice"], r.stdout
