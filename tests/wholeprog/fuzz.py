#!/usr/bin/env python3
"""Differential fuzzer over valid whole programs: CPython + NumPy (the oracle) against
appy's Python package.

    python3 tests/wholeprog/fuzz.py --seed 1 --count 300 --jobs 2 [--device cpu|gpu]
        [--keep DIR] [--shrink] [--threads 2] [--phase2 N]

For each program ``k`` (``gen.generate(seed, k)``; one whose oracle raises is replaced
by the next attempt):

* phase 1 (worker processes, ``--jobs``, many programs each): the oracle runs every call
  signature of the program's meta line (float64, float32, mixed dtypes, other sizes and
  scalars), then the module file is imported so that ``@appy.jit`` compiles it, each
  signature is called on copies of the same inputs, and every array argument and the
  return value are compared (`compare.py`); every fourth program is then imported again
  under another name and called from several threads at once, one signature each
  (phase 3);
* phase 2: fresh processes with the same ``APPY_CACHE_DIR`` import the programs again,
  load the specialisations from the persistent cache and call them in reverse order.

A compile refusal (``appy.CompileError``) is counted as refused, by class; an internal
compiler error is a mismatch. A worker that
dies (SIGSEGV, ...) or hangs is a failure naming the program. The last line is
``wholeprog: N programs, C calls, M mismatches, R refused``; the exit status is 1 on any
mismatch, crash or hang. ``--keep DIR`` writes each failing program there; ``--shrink``
also writes its minimal version (``shrink.py``).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import compare as C  # noqa: E402
import gen  # noqa: E402

def ci_count():
    """Programs of the CI slice (`crates/appy-python/tests/test_wholeprog.py`):
    `APPY_WHOLEPROG_CASES`, default 300."""
    return int(os.environ.get("APPY_WHOLEPROG_CASES", "300"))


MAX_ATTEMPTS = 8
PER_PROGRAM_TIMEOUT = 40.0


# -------------------------------------------------------------------------------------
# One program, in a worker process
# -------------------------------------------------------------------------------------
def choose_program(seed, k, exclude=()):
    """(text, attempt, cases) for program k: the first attempt whose oracle runs on every
    signature; (None, attempts, reason) when none does."""
    why = ""
    for attempt in range(MAX_ATTEMPTS):
        try:
            text = gen.generate(seed, k, attempt, exclude)
        except gen.Unsettled as e:
            why = str(e)
            continue
        meta = C.meta_of(text)
        try:
            fn = C.plain_function(text)
            cases = C.oracle_all(fn, meta, text, seed * 100003 + k)
            return text, attempt, cases
        except C.OracleError as e:
            why = str(e)
    return None, MAX_ATTEMPTS, why


def check_text(text, path, modname, order=None, cases=None, seed=0, threads=False):
    """Checks one program text (written to ``path``): returns a result dict with
    ``status`` 'ok' | 'mismatch' | 'refused' | 'discarded', ``diffs``, ``calls``."""
    meta = C.meta_of(text)
    if cases is None:
        try:
            cases = C.oracle_all(C.plain_function(text), meta, text, seed)
        except C.OracleError as e:
            return {"status": "discarded", "why": str(e), "diffs": [], "calls": 0}
    with open(path, "w") as fh:
        fh.write(text)
    mod = C.load_module(path, modname)
    order = list(range(len(meta["sigs"]))) if order is None else order
    diffs, refused = C.check_calls(mod.f, meta, text, cases, order)
    calls = len(order)
    if refused:
        return {"status": "refused", "class": refused, "diffs": diffs, "calls": calls}
    if threads and not diffs:
        tdiffs = thread_phase(path, modname + "_t", meta, text, cases)
        diffs += [f"phase 3 (threads): {d}" for d in tdiffs]
        calls += 2 * len(cases)
    return {"status": "mismatch" if diffs else "ok", "diffs": diffs, "calls": calls}


def thread_phase(path, modname, meta, text, cases):
    """Phase 3: a fresh import of the program, every signature called from its own
    thread at once (twice each), compared with the oracle."""
    mod = C.load_module(path, modname)
    diffs = []
    barrier = threading.Barrier(len(cases))

    def work(si):
        try:
            barrier.wait(timeout=30)
            for _ in range(2):
                d, refused = C.check_calls(mod.f, meta, text, cases, [si])
                if refused:
                    d = [f"sig {si}: refused in a thread: {refused}"]
                diffs.extend(d)
        except Exception as e:  # noqa: BLE001 - reported
            diffs.append(f"sig {si}: thread failed: {type(e).__name__}: {e}")

    ts = [threading.Thread(target=work, args=(si,)) for si in range(len(cases))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return diffs


def worker(job_path):
    """Runs a job file: {"phase", "seed", "device", "programs": [{"k", "path", ...}],
    "results"}. Writes one JSON line per event to the results file (flushed), so that the
    parent knows which program a crashed worker was running."""
    import logging
    with open(job_path) as fh:
        job = json.load(fh)
    import appy
    logging.getLogger("appy").setLevel(logging.ERROR)
    appy.device(job["device"])
    out = open(job["results"], "a", buffering=1)
    seed = job["seed"]
    for prog in job["programs"]:
        k = prog["k"]
        out.write(json.dumps({"k": k, "event": "begin"}) + "\n")
        out.flush()
        os.fsync(out.fileno())
        t0 = time.time()
        try:
            if job["phase"] == 1 and prog.get("file"):
                with open(prog["file"]) as fh:
                    text = fh.read()
                res = check_text(text, prog["path"], prog["mod"], threads="3" in job["phases"])
            elif job["phase"] == 1:
                text, attempt, cases = choose_program(seed, k, job.get("exclude", ()))
                if text is None:
                    res = {"status": "discarded", "why": cases, "diffs": [], "calls": 0}
                else:
                    res = check_text(text, prog["path"], prog["mod"], cases=cases,
                                     threads=(k % 4 == 0 and "3" in job["phases"]))
                    res["attempt"] = attempt
            else:
                with open(prog["path"]) as fh:
                    text = fh.read()
                meta = C.meta_of(text)
                order = list(reversed(range(len(meta["sigs"]))))
                res = check_text(text, prog["path"], prog["mod"] + "_p2", order=order,
                                 seed=0 if prog.get("file") else seed * 100003 + k)
                res["diffs"] = [f"phase 2 (second process, cache): {d}" for d in res["diffs"]]
        except Exception as e:  # noqa: BLE001 - an error of the harness or of appy
            res = {"status": "mismatch", "calls": 0,
                   "diffs": [f"harness/appy exception: {type(e).__name__}: {e}",
                             traceback.format_exc()[-1500:]]}
        res.update({"k": k, "event": "done", "secs": round(time.time() - t0, 3)})
        out.write(json.dumps(res) + "\n")
        out.flush()
    out.close()


# -------------------------------------------------------------------------------------
# The parent: batches, worker processes, crashes, the summary
# -------------------------------------------------------------------------------------
def run_batches(jobs_specs, nproc, env, rundir, timeout_per_prog, tag="p"):
    """Runs batches of programs in up to ``nproc`` workers at a time. A worker that dies
    or hangs: its current program is recorded as a crash and the rest of its batch goes
    to a new worker. Returns {k: result}."""
    results = {}
    pending = list(jobs_specs)
    running = []
    counter = [0]

    def start(spec):
        counter[0] += 1
        jp = os.path.join(rundir, f"{tag}job{counter[0]}.json")
        rp = os.path.join(rundir, f"{tag}res{counter[0]}.jsonl")
        spec = dict(spec, results=rp)
        with open(jp, "w") as fh:
            json.dump(spec, fh)
        errp = open(os.path.join(rundir, f"{tag}err{counter[0]}.txt"), "w")
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", jp],
                             env=env, stdout=errp, stderr=subprocess.STDOUT)
        running.append((p, spec, rp, time.time(), errp))

    def read(rp):
        begun, done = None, {}
        if os.path.exists(rp):
            with open(rp) as fh:
                for line in fh:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    if r["event"] == "begin":
                        begun = r["k"]
                    else:
                        done[r["k"]] = r
        return begun, done

    total = sum(len(s["programs"]) for s in jobs_specs)
    last = [time.time()]

    def progress():
        # Every 30 s, so that a run cut short still says how far it got.
        if time.time() - last[0] >= 30:
            last[0] = time.time()
            bad = sum(1 for r in results.values() if r.get("status") in ("mismatch", "crash"))
            print(f"{tag}: {len(results)} of {total} programs done, {bad} failing", file=sys.stderr, flush=True)

    while pending or running:
        while pending and len(running) < nproc:
            start(pending.pop(0))
        time.sleep(0.05)
        progress()
        for item in list(running):
            p, spec, rp, t0, errp = item
            rc = p.poll()
            begun, done = read(rp)
            hung = rc is None and time.time() - t0 > timeout_per_prog * (len(done) + 1)
            if rc is None and not hung:
                continue
            if hung:
                p.kill()
                p.wait()
                rc = "hang"
            running.remove(item)
            errp.close()
            results.update(done)
            if rc != 0 and begun is not None and begun not in done:
                with open(errp.name) as fh:
                    tail = fh.read()[-2000:]
                why = f"worker process {'hung' if rc == 'hang' else 'died'} (exit {rc}"
                if isinstance(rc, int) and rc < 0:
                    why += f", {signal.Signals(-rc).name}"
                results[begun] = {"k": begun, "status": "crash", "calls": 0,
                                  "diffs": [f"phase {spec['phase']}: {why}): {tail.strip()}"]}
                rest = [q for q in spec["programs"] if q["k"] not in done and q["k"] != begun]
                if rest:
                    pending.insert(0, dict(spec, programs=rest))
            elif rc != 0:
                rest = [q for q in spec["programs"] if q["k"] not in done]
                for q in rest:
                    results[q["k"]] = {"k": q["k"], "status": "crash", "calls": 0,
                                       "diffs": [f"phase {spec['phase']}: worker exited {rc} before it"]}
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--start", type=int, default=0, help="first program index")
    ap.add_argument("--programs", default=None,
                    help="a file of program numbers (separated by spaces) to check instead of --start/--count")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--threads", default="2",
                    help="APPY_NUM_THREADS of the workers (default 2)")
    ap.add_argument("--phase2", type=int, default=None,
                    help="programs checked again from the persistent cache in second processes (default: all)")
    ap.add_argument("--phases", default="123",
                    help="phases to run: 1 (compile and compare), 2 (second process, cache), 3 (threads)")
    ap.add_argument("--exclude", default="",
                    help="triage only: leave constructs out of the programs (" + ",".join(gen.EXCLUDABLE) + ")")
    ap.add_argument("--batch", type=int, default=0, help="programs per worker process")
    ap.add_argument("--keep", default=None, help="write failing programs to this directory")
    ap.add_argument("--shrink", action="store_true", help="also write each failure's minimal program")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--files", nargs="+", default=None,
                    help="check these program files (regressions) instead of generated ones")
    ap.add_argument("--one", type=int, default=None, help="print program K of the seed and check it in this process")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    if args.one is not None:
        return one(args)

    exclude = [e for e in (args.exclude or "").split(",") if e]
    bad = set(exclude) - set(gen.EXCLUDABLE)
    if bad:
        ap.error(f"--exclude: unknown {sorted(bad)} (known: {', '.join(gen.EXCLUDABLE)})")
    t_start = time.time()
    rundir = tempfile.mkdtemp(prefix="appy-wholeprog-")
    os.chmod(rundir, 0o700)
    cache = os.path.join(rundir, "cache")
    os.mkdir(cache, 0o700)
    progs = os.path.join(rundir, "progs")
    os.mkdir(progs, 0o700)
    env = dict(os.environ, APPY_CACHE_DIR=cache, APPY_NUM_THREADS=str(args.threads),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("APPY_DISABLE_JIT", None)
    if args.files:
        ks = list(range(len(args.files)))
    elif args.programs:
        with open(args.programs) as fh:
            ks = sorted({int(t) for t in fh.read().split()})
    else:
        ks = list(range(args.start, args.start + args.count))
    batch = args.batch or max(4, min(25, -(-len(ks) // (args.jobs * 3))))

    def spec_for(phase, kk):
        return {"phase": phase, "seed": args.seed, "device": args.device, "phases": args.phases,
                "exclude": exclude,
                "programs": [{"k": k, "path": os.path.join(progs, f"wp_{args.seed}_{k}.py"),
                              "mod": f"wp_{args.seed}_{k}",
                              "file": os.path.abspath(args.files[k]) if args.files else None} for k in kk]}

    try:
        specs = [spec_for(1, ks[i:i + batch]) for i in range(0, len(ks), batch)]
        r1 = run_batches(specs, args.jobs, env, rundir, PER_PROGRAM_TIMEOUT, "p1")
        t1 = time.time()
        ok2 = [k for k in ks if r1.get(k, {}).get("status") in ("ok", "mismatch")
               and os.path.exists(os.path.join(progs, f"wp_{args.seed}_{k}.py"))]
        if args.phase2 is not None:
            ok2 = ok2[: args.phase2]
        if "2" not in args.phases:
            ok2 = []
        specs2 = [spec_for(2, ok2[i:i + batch * 2]) for i in range(0, len(ok2), batch * 2)]
        r2 = run_batches(specs2, args.jobs, env, rundir, PER_PROGRAM_TIMEOUT, "p2")
        t2 = time.time()
        return report(args, ks, r1, r2, progs, t_start, t1, t2)
    finally:
        if os.environ.get("APPY_WHOLEPROG_KEEP_RUNDIR", "") not in ("", "0"):
            print(f"run directory kept: {rundir}")
        else:
            shutil.rmtree(rundir, ignore_errors=True)


def one(args):
    """``--one K``: program K, checked in this process (for debugging)."""
    import appy
    appy.device(args.device)
    text, attempt, cases = choose_program(args.seed, args.one, [e for e in args.exclude.split(",") if e])
    if text is None:
        print("discarded:", cases)
        return 0
    print(text)
    d = tempfile.mkdtemp(prefix="appy-wholeprog-one-")
    try:
        res = check_text(text, os.path.join(d, "prog.py"), f"wp_one_{args.one}", cases=cases, threads=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(json.dumps(res, indent=1))
    return 0 if res["status"] in ("ok", "refused") else 1


def report(args, ks, r1, r2, progs, t_start, t1, t2):
    calls = sum(r.get("calls", 0) for r in r1.values()) + sum(r.get("calls", 0) for r in r2.values())
    failures = []   # (k, phase, result)
    refused = {}
    discarded = 0
    for k in ks:
        r = r1.get(k, {"status": "crash", "diffs": ["no result (worker lost)"]})
        if r["status"] == "refused":
            refused.setdefault(r["class"], []).append(k)
        elif r["status"] == "discarded":
            discarded += 1
        if r["status"] in ("mismatch", "crash") or r.get("diffs") and r["status"] == "refused":
            failures.append((k, 1, r))
        r2k = r2.get(k)
        if r2k and r2k["status"] in ("mismatch", "crash"):
            failures.append((k, 2, r2k))
        elif r2k and r2k["status"] == "refused" and r["status"] != "refused":
            r2k["diffs"] = r2k.get("diffs", []) + [f"phase 2: refused in the second process: {r2k['class']}"]
            failures.append((k, 2, r2k))
    for k, phase, r in failures:
        path = os.path.join(progs, f"wp_{args.seed}_{k}.py")
        name = args.files[k] if args.files else f"program {k} (seed {args.seed})"
        print(f"--- {name} phase {phase}: {r['status']}")
        for d in r.get("diffs", [])[:6]:
            print("    " + d.replace("\n", "\n    "))
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            if os.path.exists(path):
                dst = os.path.join(args.keep, f"wp_{args.seed}_{k}.py")
                with open(path) as fh:
                    text = fh.read()
                with open(dst, "w") as fh:
                    fh.write(C.with_meta(text, data_seed=args.seed * 100003 + k))
                print(f"    kept {dst}")
                if args.shrink:
                    import shrink
                    mode = "phase2" if phase == 2 else ("crash" if r["status"] == "crash" else "phase1")
                    if mode == "phase1" and all("phase 3" in d for d in r.get("diffs", [])):
                        mode = "threads"
                    small = shrink.shrink_file(dst, mode, device=args.device, threads=args.threads,
                                               log=None if args.quiet else print)
                    print(f"    shrunk to {small}")
    if refused and not args.quiet:
        print("refusal classes:")
        for cls, kk in sorted(refused.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(kk):4d}  {cls}   (e.g. program {kk[0]})")
    # programs (not program-phase pairs)
    nmis = len({k for k, _, r in failures if r["status"] != "crash"})
    ncrash = len({k for k, _, r in failures if r["status"] == "crash"})
    nref = sum(len(v) for v in refused.values())
    el = t2 - t_start
    if not args.quiet:
        print(f"phase 1: {t1 - t_start:.1f} s, phase 2: {t2 - t1:.1f} s ({len(r2)} programs); "
              f"{len(ks) / el:.2f} programs/s; {discarded} discarded (oracle raised {MAX_ATTEMPTS} times)")
    print(f"wholeprog: {len(ks)} programs, {calls} calls, {nmis} mismatches, {nref} refused"
          + (f", {ncrash} crashes" if ncrash else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
