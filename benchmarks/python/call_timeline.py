#!/usr/bin/env python3
"""Where a call's time goes (BENCHMARKS.md, 2026-11-30 03:28 UTC): NPBench's go_fast,
gesummv and covariance through the appy package on torch CUDA tensors at the harness's
sizes: the median wall time of 20 calls (`perf_counter` around the call and a
synchronize), the CUDA-event time around the call, then `torch.profiler`'s timeline of
three calls (every GPU kernel and copy, and the host's CUDA calls).

    python3 benchmarks/python/call_timeline.py [go_fast|gesummv|covariance ...]   # GPU machine
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "npbench"))
import kernels as K  # noqa: E402

dev = "cuda"
g = torch.Generator(device="cpu").manual_seed(0)


def R(*s):
    return torch.rand(*s, dtype=torch.float64, generator=g).to(dev)


def E(*s):
    return torch.empty(*s, dtype=torch.float64, device=dev)


cases = {
    "go_fast": lambda: (K.go_fast, [R(12500, 12500), E(12500, 12500)]),
    "gesummv": lambda: (K.gesummv, [1.5, 1.2, R(11200, 11200), R(11200, 11200), R(11200), E(11200)]),
    "covariance": lambda: (K.covariance, [1200, 1400.0, R(1400, 1200), E(1200, 1200), E(1200)]),
}


def main():
    from torch.profiler import ProfilerActivity, profile

    for name in sys.argv[1:] or list(cases):
        f, args = cases[name]()
        # The first call compiles and runs one candidate; the second tunes once the
        # others have compiled in the background.
        f(*args)
        torch.cuda.synchronize()
        time.sleep(4)
        for _ in range(4):
            f(*args)
        torch.cuda.synchronize()
        wall, ev = [], []
        for _ in range(20):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            s.record()
            f(*args)
            e.record()
            torch.cuda.synchronize()
            wall.append((time.perf_counter() - t0) * 1e3)
            ev.append(s.elapsed_time(e))
        print(f"{name}: wall median {statistics.median(wall):.4f} ms min {min(wall):.4f}; events median {statistics.median(ev):.4f} ms", flush=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            for _ in range(3):
                f(*args)
                torch.cuda.synchronize()
        events = p.events()
        for x in events:
            if x.device_type.name == "CUDA":
                print(f"   GPU {x.name[:60]:<60} start {x.time_range.start:>12.1f} us dur {x.time_range.elapsed_us():>9.1f} us")
        for x in events:
            if x.device_type.name != "CUDA" and x.name.startswith("cu"):
                print(f"   CPU {x.name[:60]:<60} start {x.time_range.start:>12.1f} us dur {x.time_range.elapsed_us():>9.1f} us")


if __name__ == "__main__":
    main()
