"""Timing shared by the benchmark scripts: the median over rounds of the mean time of
`reps` calls, each followed by `sync`, a device synchronize for appy as for torch (appy's
calls on device arrays return once their work is queued, as torch's do)."""
import statistics
import time


def timed(fn, reps, sync, rounds=7):
    """Microseconds per call: one warm-up call, then the median of `rounds` means."""
    fn()
    sync()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
            sync()
        out.append((time.perf_counter() - t0) / reps)
    return statistics.median(out) * 1e6
