"""`print(...)` from the host code, in program order, formatted as CPython and NumPy
format (checked by crates/appy-tools/tests/cli.rs: `appy run` against `python3`)."""
import math
import numpy as np
import appy


@appy.jit
def report(a, n):
    s = 0.0
    for i in range(n):
        s += a[i]
    print("sum", s, n, True, sep=", ")
    print(f"mean = {s / n:.3f} [{n:4d}] {np.float32(s)} {s:e} {n:,} {s:>12.4g}|")
    for k in range(3):
        print("k =", k, end="; ")
    print()
    print(a[0], a[n - 1], 1e-5, 1e16, 1.0 / 3.0, -0.0, math.inf, np.float32(1.0) / 3, n > 2)
    #pragma parallel for
    for i in range(n):
        a[i] = 2.0 * a[i]
    print(f"after the loop: a[0] = {a[0]}, {{braces}}")
