"""Timing shared by the benchmark scripts: the median over rounds of the mean time of
`reps` calls, each followed by `sync`, a device synchronize for appy as for torch (appy's
calls on device arrays return once their work is queued, as torch's do)."""
import json
import os
import statistics
import subprocess
import sys
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


def run_modes(script, envs, reps):
    """Runs `script --child --reps REPS` once per mode of `envs` (mode -> environment
    variables), each in a new process (appy reads its options when a function
    compiles); returns mode -> the JSON object the child printed last, and prints the
    autotuner's choices (`chose` lines of its stderr) prefixed by the mode."""
    modes = {}
    for mode, e in envs.items():
        env = dict(os.environ, **e)
        p = subprocess.run([sys.executable, script, "--child", "--reps", str(reps)], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            raise SystemExit(f"child {mode} failed")
        modes[mode] = json.loads(p.stdout.strip().splitlines()[-1])
        for line in p.stderr.splitlines():
            if "chose" in line:
                print(f"# {mode}:", line)
    return modes
