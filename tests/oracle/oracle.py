"""Runs an APPy function under CPython + NumPy (the correctness oracle).

usage: oracle.py FILE FUNC IN_DIR OUT_DIR [--longdouble]
IN_DIR holds args.json (parameter names with either {"npy": "name.npy"} or
{"int": v} / {"float": v}, an int with "dtype" being a NumPy scalar of that dtype); final array arguments go to OUT_DIR/NAME.npy, the return
value to OUT_DIR/return.npy (return_K.npy for tuples).
"""
import importlib.util
import json
import os
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

src, func, ind, outd = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("kernel_under_test", src)
mod = importlib.util.module_from_spec(spec)


# CPython compiles a flat chain of a few thousand `+` terms recursively (RecursionError
# at the default limit): the long-expression tests need a deeper limit and a stack for it.
sys.setrecursionlimit(200000)
threading.stack_size(512 << 20)
failure = []


def main():
    try:
        spec.loader.exec_module(mod)
        run()
    except BaseException as e:  # re-raised in the main thread
        failure.append(e)


def run():
    fn = getattr(mod, func)
    meta = json.load(open(os.path.join(ind, "args.json")))
    args = []
    for name, a in meta:
        if "npy" in a:
            args.append(np.load(os.path.join(ind, a["npy"])))
        elif "int" in a and "dtype" in a:
            args.append(np.dtype(a["dtype"]).type(a["int"]))
        elif "int" in a:
            args.append(int(a["int"]))
        else:
            args.append(float(a["float"]))
    # --longdouble: float arrays are computed in long double (x87 extended
    # precision) and rounded back to their dtypes, a reference for the accuracy of the
    # math functions that is more precise than NumPy's own float32 and float64 ones.
    longdouble = "--longdouble" in sys.argv[5:]
    dtypes = [getattr(a, "dtype", None) for a in args]
    if longdouble:
        args = [a.astype(np.longdouble) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
    with np.errstate(all="ignore"):
        ret = fn(*args)
    if longdouble:
        args = [a.astype(d) if isinstance(a, np.ndarray) and a.dtype == np.longdouble else a for a, d in zip(args, dtypes)]
        if ret is not None:
            conv = lambda r: np.asarray(r).astype(np.float64) if np.asarray(r).dtype == np.longdouble else r
            ret = tuple(conv(r) for r in ret) if isinstance(ret, tuple) else conv(ret)
    os.makedirs(outd, exist_ok=True)
    for (name, a), v in zip(meta, args):
        if "npy" in a:
            np.save(os.path.join(outd, name + ".npy"), v)
    if ret is not None:
        rets = ret if isinstance(ret, tuple) else (ret,)
        for k, r in enumerate(rets):
            fname = "return.npy" if len(rets) == 1 else "return_%d.npy" % k
            np.save(os.path.join(outd, fname), np.asarray(r))


t = threading.Thread(target=main)
t.start()
t.join()
if failure:
    raise failure[0]
