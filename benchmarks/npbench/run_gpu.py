#!/usr/bin/env python3
"""NPBench-20 on the GPU: appy next to the peers, in one process on one GPU.

Runs the peers harness (../shared/peers/bench.py, prepared with fetch_vendor.sh) with one
more framework, `appy_rs`: the `@appy.jit` functions of kernels.py (the `appy` package:
`pip install ./crates/appy-python`), called directly on the same torch CUDA tensors the
torch framework gets, so the harness's method applies unchanged (correctness against
NumPy, fresh copies of in-place arrays before the clock, perf_counter around the call +
device synchronize, median). As for torch.compile, JAX and CuPy, compiling (and
autotuning) happens in the first call, which the harness records as `first_run_ms`: the
compile cache starts empty (a fresh APPY_CACHE_DIR) unless --warm-cache is given.

    cd PEERS_DIR && OUT=$OUT python3 ROOT/benchmarks/npbench/run_gpu.py [--warm-cache]

Environment as for bench.py (BENCH_KERNELS, BENCH_FRAMEWORKS, BENCH_BUDGET_S, ...).
The upstream APPy framework (`appy` in BENCH_FRAMEWORKS) is also a Python package named
`appy`; it gets its own modules while it is set up and called."""
import argparse
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import adapters  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--peers", default=os.getcwd())
ap.add_argument("--warm-cache", action="store_true", help="keep the user's compile cache (first calls then load compiled code)")
a = ap.parse_args()
if not a.warm_cache:
    os.environ["APPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="appy-cache-")
os.environ.setdefault("BENCH_FRAMEWORKS", "numpy,appy_rs,torch,torch_compile,jax,cupy,appy")

# This package's `appy` and the kernels, imported before the harness.
import appy  # noqa: E402

spec = importlib.util.spec_from_file_location("npbench_kernels", os.path.join(HERE, "kernels.py"))
kernels = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kernels)

sys.path.insert(0, a.peers)
spec = importlib.util.spec_from_file_location("bench", os.path.join(a.peers, "bench.py"))
bench = importlib.util.module_from_spec(spec)
sys.modules["bench"] = bench
spec.loader.exec_module(bench)


def _take_appy_modules():
    return {k: sys.modules.pop(k) for k in list(sys.modules) if k == "appy" or k.startswith("appy.")}


def _swap(mods):
    """Installs `mods` as the `appy` package; returns the modules it replaced."""
    old = _take_appy_modules()
    sys.modules.update(mods)
    return old


class AppyRsFW(bench.TorchFW):
    name = "appy_rs"

    def version(self):
        return f"appy {appy.__version__} (package)"

    def impl(self, kname, info, spec):
        fn_appy = getattr(kernels, kname, None)
        if fn_appy is None or kname not in adapters.KERNELS:
            raise bench.Unavailable("no appy kernel")
        ad = adapters.KERNELS[kname]
        names = info["input_args"]
        torch = self.torch

        def new(shape, dtype, zero=False):
            f = torch.zeros if zero else torch.empty
            return f(tuple(int(s) for s in shape), dtype=getattr(torch, dtype), device=self.device)

        rets = sorted((o, i) for o, i in ad["outs"].items() if o.startswith("ret"))

        def fn(*vals):
            args = ad["args"](dict(zip(names, vals)), new)
            fn_appy(*args)
            if not rets:
                return None
            if len(rets) == 1:
                return args[rets[0][1]]
            return tuple(args[i] for _, i in rets)

        return fn, "appy: benchmarks/npbench/kernels.py through the appy package (cuBLAS for matrix products)"


class UpstreamAppyFW(bench.AppyFW):
    """The upstream APPy package, with its own `appy` modules (this package's are
    swapped out while APPy is set up, loads a kernel, or runs one)."""

    def setup(self):
        src = os.path.join(bench.VENDOR, "appy_src")
        ours = _swap({})
        sys.path.insert(0, src)
        try:
            super().setup()
        finally:
            sys.path.remove(src)
            self.mods = _swap(ours)

    def impl(self, kname, info, spec):
        ours = _swap(self.mods)
        try:
            fn, note = super().impl(kname, info, spec)
        finally:
            self.mods = _swap(ours)

        def call(*args):
            mine = _swap(self.mods)
            try:
                return fn(*args)
            finally:
                self.mods = _swap(mine)

        return call, note


bench.FW_CLASSES["appy_rs"] = AppyRsFW
bench.FW_CLASSES["appy"] = UpstreamAppyFW
# bench.py's own table has no column for appy_rs: report.py makes the table.
bench.print_table = lambda *a, **k: None
bench.main()
