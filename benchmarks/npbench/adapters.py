"""How each NPBench kernel maps onto its appy version in kernels.py: the argument types
(for `appy compile --signature`), the arguments built from NPBench's inputs (`ns`:
NPBench's parameter/array namespace), and which values to compare with NumPy.

`args(ns, new)` returns the appy arguments in order; `new(shape, dtype)` allocates
an output array on the caller's device (NumPy here, torch on the GPU).
`outs` maps NPBench output names to argument positions (NPBench's return value is
`ret`, `ret0`, ...)."""
import numpy as np

F = "float"
M2 = "f64[:,:]"
V = "f64[:]"


def _shape(x):
    return tuple(x.shape)


KERNELS = {
    "gemm": dict(sig=[F, F, M2, M2, M2], args=lambda ns, new: [ns["alpha"], ns["beta"], ns["C"], ns["A"], ns["B"]], outs={"C": 2}),
    "gemver": dict(sig=[F, F, M2] + [V] * 8,
                   args=lambda ns, new: [ns[k] for k in ["alpha", "beta", "A", "u1", "v1", "u2", "v2", "w", "x", "y", "z"]],
                   outs={"A": 2, "w": 7, "x": 8}),
    "gesummv": dict(sig=[F, F, M2, M2, V, V],
                    args=lambda ns, new: [ns["alpha"], ns["beta"], ns["A"], ns["B"], ns["x"], new((ns["A"].shape[0],), "float64")],
                    outs={"ret": 5}),
    "go_fast": dict(sig=[M2, M2], args=lambda ns, new: [ns["a"], new(_shape(ns["a"]), "float64")], outs={"ret": 1}),
    "jacobi_2d": dict(sig=["int", M2, M2], args=lambda ns, new: [ns["TSTEPS"], ns["A"], ns["B"]], outs={"A": 1, "B": 2}),
    "heat_3d": dict(sig=["int", "f64[:,:,:]", "f64[:,:,:]"], args=lambda ns, new: [ns["TSTEPS"], ns["A"], ns["B"]], outs={"A": 1, "B": 2}),
    "softmax": dict(sig=["f32[:,:,:,:]", "f32[:,:,:,:]"], args=lambda ns, new: [ns["x"], new(_shape(ns["x"]), "float32")], outs={"ret": 1}),
    "spmv": dict(sig=["i64[:]", "i64[:]", V, V, V],
                 args=lambda ns, new: [ns["A_row"], ns["A_col"], ns["A_val"], ns["x"], new((ns["A_row"].shape[0] - 1,), "float64")],
                 outs={"ret": 4}, int64=["A_row", "A_col"]),
    "floyd_warshall": dict(sig=["i32[:,:]"], args=lambda ns, new: [ns["path"]], outs={"path": 0}),
    "syrk": dict(sig=[F, F, M2, M2], args=lambda ns, new: [ns["alpha"], ns["beta"], ns["C"], ns["A"]], outs={"C": 2}),
    "syr2k": dict(sig=[F, F, M2, M2, M2], args=lambda ns, new: [ns["alpha"], ns["beta"], ns["C"], ns["A"], ns["B"]], outs={"C": 2}),
    "symm": dict(sig=[F, F, M2, M2, M2], args=lambda ns, new: [ns["alpha"], ns["beta"], ns["C"], ns["A"], ns["B"]], outs={"C": 2}),
    "trmm": dict(sig=[F, M2, M2], args=lambda ns, new: [ns["alpha"], ns["A"], ns["B"]], outs={"B": 2}),
    "fdtd_2d": dict(sig=["int", M2, M2, M2, V], args=lambda ns, new: [ns["TMAX"], ns["ex"], ns["ey"], ns["hz"], ns["_fict_"]],
                    outs={"ex": 1, "ey": 2, "hz": 3}),
    "trisolv": dict(sig=[M2, V, V], args=lambda ns, new: [ns["L"], ns["x"], ns["b"]], outs={"x": 1}),
    "covariance": dict(sig=["int", F, M2, M2, V],
                       args=lambda ns, new: [ns["M"], ns["float_n"], ns["data"], new((ns["M"], ns["M"]), "float64"), new((ns["M"],), "float64")],
                       outs={"ret": 3}),
    "gramschmidt": dict(sig=[M2, M2, M2],
                        args=lambda ns, new: [ns["A"], new(_shape(ns["A"]), "float64", zero=True), new((ns["A"].shape[1],) * 2, "float64", zero=True)],
                        outs={"ret0": 1, "ret1": 2}),
    "cholesky": dict(sig=[M2], args=lambda ns, new: [ns["A"]], outs={"A": 0}),
    "hdiff": dict(sig=["f64[:,:,:]"] * 3, args=lambda ns, new: [ns["in_field"], ns["out_field"], ns["coeff"]], outs={"out_field": 1}),
    "azimint_naive": dict(sig=[V, V, V, "int"],
                          args=lambda ns, new: [ns["data"], ns["radius"], new((ns["npt"],), "float64"), ns["npt"]], outs={"ret": 2}),
}


def signature(k):
    return ",".join(KERNELS[k]["sig"])


def params(k):
    """The appy function's parameter names (kernels.py)."""
    import ast
    import os
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.py")).read()
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name == k:
            return [a.arg for a in node.args.args]
    raise KeyError(k)


def runner_args(bench, k, sizes):
    """The appy function's parameter names and argument values (NumPy arrays, outputs
    zero-filled) for kernel `k` at NPBench sizes `sizes`, from the harness's initializer
    (`bench` is the peers harness module)."""
    ad = KERNELS[k]
    ns = bench.make_inputs(k, bench.load_info(k), sizes)
    for n in ad.get("int64", []):
        ns[n] = ns[n].astype(np.int64)
    for n, v in list(ns.items()):
        if isinstance(v, np.ndarray) and v.dtype == np.uint32:
            ns[n] = v.astype(np.int64)
    return params(k), ad["args"](ns, lambda shape, dtype, zero=False: np.zeros(shape, dtype))


def cli_args(names, args, d):
    """`--arg NAME=...` options for `appy run/exec`: arrays are saved as .npy in `d`."""
    import os
    out = []
    for n, v in zip(names, args):
        if isinstance(v, np.ndarray):
            p = os.path.join(d, "in_" + n + ".npy")
            np.save(p, np.ascontiguousarray(v))
            out += ["--arg", f"{n}=@{p}"]
        elif isinstance(v, (bool, np.bool_)):
            out += ["--arg", f"{n}={bool(v)}"]
        elif isinstance(v, (int, np.integer)):
            out += ["--arg", f"{n}={int(v)}"]
        else:
            out += ["--arg", f"{n}={float(v)!r}"]
    return out
