#!/usr/bin/env python3
"""The `# test:` cases of some files (scripts/cases.py's format) run through the installed
`appy` package on its default device (the GPU when there is one), on NumPy arrays, and
compared with the same function run by CPython + NumPy (`py_func`):

    python3 scripts/package_cases.py tests/cases/transforms.py [...]

Prints one line per case and a summary; exits non-zero if any case fails."""
import importlib.util
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import cases  # noqa: E402

import appy  # noqa: E402


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(paths):
    print(f"# appy device: {appy.device()}")
    ok = fail = 0
    for path in paths:
        path = os.path.abspath(path)
        mod = load(path)
        for p, func, _, spec in cases.all_specs():
            if p != path:
                continue
            f = getattr(mod, func)
            for k in range(spec.cases()):
                rng = np.random.default_rng(1000 + k)
                args = spec.args(k, rng)
                got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                try:
                    r_got = f(*got)
                    r_want = f.py_func(*want)
                    errs = [cases.compare(spec, g, w) for g, w in zip(got, want) if isinstance(w, np.ndarray)]
                    if r_want is not None:
                        errs.append(cases.compare(spec, r_got, r_want))
                    errs = [e for e in errs if e]
                except Exception as e:  # a failure to compile or run is a failure
                    errs = [f"{type(e).__name__}: {e}"]
                name = f"{os.path.basename(path)}::{func} {spec.env(k)}"
                if errs:
                    fail += 1
                    print(f"FAIL {name}: {errs[0]}")
                else:
                    ok += 1
                    print(f"ok   {name}")
    print(f"package cases: {ok} passed, {fail} failed")
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
