#!/usr/bin/env python3
"""NPBench-20 on the GPU: appy next to the peers, in one process on one GPU.

Runs the peers harness (../shared/peers/bench.py, prepared with fetch_vendor.sh) with one
more framework, `appy_rs`: the kernels of kernels.py, compiled here beforehand
(`python3 benchmarks/npbench/compile.py`: tuned bundles + libappy_capi.so) and called
through the C ABI on the same torch CUDA tensors the torch framework gets, so the
harness's method applies unchanged (correctness against NumPy, fresh copies of in-place
arrays before the clock, perf_counter around the call + device synchronize, median).

    cd PEERS_DIR && OUT=$OUT python3 ROOT/benchmarks/npbench/run_gpu.py --bundles ROOT/.dev/npbench

Environment as for bench.py (BENCH_KERNELS, BENCH_FRAMEWORKS, BENCH_BUDGET_S, ...)."""
import argparse
import ctypes
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import adapters  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bundles", required=True)
ap.add_argument("--peers", default=os.getcwd())
a = ap.parse_args()
BUNDLES = os.path.abspath(a.bundles)
os.environ.setdefault("BENCH_FRAMEWORKS", "numpy,appy_rs,torch,torch_compile,jax,cupy,appy")
sys.path.insert(0, a.peers)
spec = importlib.util.spec_from_file_location("bench", os.path.join(a.peers, "bench.py"))
bench = importlib.util.module_from_spec(spec)
sys.modules["bench"] = bench
spec.loader.exec_module(bench)


class AppyRsFW(bench.TorchFW):
    name = "appy_rs"

    def setup(self):
        super().setup()
        lib = ctypes.CDLL(os.path.join(BUNDLES, "libappy_capi.so"))
        lib.appy_load.restype = ctypes.c_void_p
        lib.appy_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.appy_call.restype = ctypes.c_int
        P = ctypes.POINTER
        lib.appy_call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, P(ctypes.c_int32), P(ctypes.c_uint64), P(ctypes.c_int64),
                                  P(ctypes.c_double), P(ctypes.c_int32), P(ctypes.c_int32), P(ctypes.c_int64),
                                  ctypes.c_char_p, ctypes.c_size_t]
        self.lib = lib
        self.err = ctypes.create_string_buffer(4096)
        self._bufs = {}
        torch = self.torch
        self._codes = {torch.float32: 0, torch.float64: 1, torch.int32: 2, torch.int64: 3}
        v = os.path.join(BUNDLES, "VERSION")
        self._v = open(v).read().strip() if os.path.exists(v) else "?"

    def version(self):
        return self._v

    def call(self, h, args):
        torch = self.torch
        n = len(args)
        # The argument arrays are made once per argument count (this glue's own cost is
        # part of the timed call).
        bufs = self._bufs.get(n)
        if bufs is None:
            bufs = self._bufs[n] = ((ctypes.c_int32 * n)(), (ctypes.c_uint64 * n)(), (ctypes.c_int64 * n)(), (ctypes.c_double * n)(),
                                    (ctypes.c_int32 * n)(), (ctypes.c_int32 * n)(), (ctypes.c_int64 * (8 * n))())
        kinds, ptrs, ints, floats, dtypes, ranks, shapes = bufs
        codes = self._codes
        for k, v in enumerate(args):
            if isinstance(v, torch.Tensor):
                if not v.is_contiguous():
                    raise RuntimeError("non-contiguous tensor")
                kinds[k], ptrs[k], dtypes[k], ranks[k] = 0, v.data_ptr(), codes[v.dtype], v.dim()
                for d, s in enumerate(v.shape):
                    shapes[8 * k + d] = s
            elif isinstance(v, (bool, int)):
                kinds[k], ints[k] = 1, int(v)
            else:
                kinds[k], floats[k] = 2, float(v)
        if self.lib.appy_call(h, n, kinds, ptrs, ints, floats, dtypes, ranks, shapes, self.err, 4096) != 0:
            raise RuntimeError("appy: " + self.err.value.decode())

    def impl(self, kname, info, spec):
        path = os.path.join(BUNDLES, kname + ".json")
        if not os.path.exists(path):
            raise bench.Unavailable("no appy bundle compiled")
        h = self.lib.appy_load(path.encode(), self.err, 4096)
        if not h:
            raise RuntimeError("appy_load: " + self.err.value.decode())
        ad = adapters.KERNELS[kname]
        names = info["input_args"]
        torch = self.torch

        def new(shape, dtype, zero=False):
            f = torch.zeros if zero else torch.empty
            return f(tuple(int(s) for s in shape), dtype=getattr(torch, dtype), device="cuda")

        rets = sorted((o, i) for o, i in ad["outs"].items() if o.startswith("ret"))

        def fn(*vals):
            ns = dict(zip(names, vals))
            args = ad["args"](ns, new)
            self.call(h, args)
            if not rets:
                return None
            if len(rets) == 1:
                return args[rets[0][1]]
            return tuple(args[i] for _, i in rets)

        return fn, "appy: benchmarks/npbench/kernels.py (cuBLAS for matrix products)"


bench.FW_CLASSES["appy_rs"] = AppyRsFW
# bench.py's own table has no column for appy_rs: report.py makes the table.
bench.print_table = lambda *a, **k: None
bench.main()
