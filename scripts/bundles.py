#!/usr/bin/env python3
"""Snapshots and compares the compiled bundles (host program + PTX) of every example
case of scripts/gpu_cases.py and every NPBench kernel (with all tuning candidates), so a
refactoring can show that it changed no generated code.

    python3 scripts/bundles.py snapshot DIR [--appy target/release/appy]
    python3 scripts/bundles.py compare OLD NEW

`compare` checks, per bundle and per tuning candidate, that the PTX text and the host
function are identical, and prints every difference; it exits non-zero if there is one
(a case only in the new snapshot is listed as new, not as a difference).
Fields that only describe the format (the version number) are not compared, and source
locations are compared relative to the checkout (`.../examples/k.py` and
`.../benchmarks/...`), so snapshots taken in two checkouts compare equal."""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "npbench"))


def items():
    import gpu_cases
    import adapters

    out = []
    for k, v in gpu_cases._cases().items():
        out.append((k, os.path.join(ROOT, "examples", v[0]), v[1], v[2], 256 if k == "block_sums" else 1024, False))
    for k, v in gpu_cases.BENCH.items():
        out.append((k, os.path.join(ROOT, "examples", v[0]), v[1], v[2], 1024, True))
    for k, v in gpu_cases.MOVEMENT.items():
        out.append((k, os.path.join(ROOT, "examples", v[0]), v[1], v[2], 1024, False))
    for k in adapters.KERNELS:
        out.append(("npbench_" + k, os.path.join(ROOT, "benchmarks", "npbench", "kernels.py"), k, adapters.signature(k), 1024, True))
    return out


def snapshot(a):
    os.makedirs(a.dir, exist_ok=True)
    failed = 0
    for name, f, func, sig, mvl, tune in items():
        cmd = [a.appy, "compile", f, "--func", func, "--signature", sig, "--mvl", str(mvl), "-o", os.path.join(a.dir, name + ".json")]
        if tune:
            cmd.append("--tune")
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, APPY_CACHE_DIR=""))
        if p.returncode != 0:
            print(f"FAIL {name}: {p.stderr.strip()}")
            failed += 1
    print(f"{len(items()) - failed} bundles in {a.dir}, {failed} failed")
    return 1 if failed else 0


def relative_locations(x):
    """`x` with every source location's checkout directory replaced by `<root>`."""
    if isinstance(x, dict):
        return {k: (re.sub(r'"[^"]*/(examples|benchmarks)/', r'"<root>/\1/', v) if k == "loc" and isinstance(v, str) else relative_locations(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [relative_locations(v) for v in x]
    return x


def candidates(b):
    yield b
    for v in b.get("variants", []):
        yield v


def compare(a):
    names = sorted(set(os.listdir(a.old)) | set(os.listdir(a.new)))
    diffs = 0
    same = 0
    added = 0
    for n in names:
        if not n.endswith(".json"):
            continue
        po, pn = os.path.join(a.old, n), os.path.join(a.new, n)
        if not os.path.exists(pn):
            print(f"{n}: only in old")
            diffs += 1
            continue
        if not os.path.exists(po):
            # A case added since: nothing to compare it with.
            print(f"{n}: new case")
            added += 1
            continue
        bo, bn = json.load(open(po)), json.load(open(pn))
        co, cn = list(candidates(bo)), list(candidates(bn))
        if len(co) != len(cn):
            print(f"{n}: {len(co)} candidates before, {len(cn)} after")
            diffs += 1
            continue
        ok = True
        for k, (x, y) in enumerate(zip(co, cn)):
            for field in ("ptx", "host", "kernels", "args", "results", "params", "mvl"):
                if relative_locations(x.get(field)) != relative_locations(y.get(field)):
                    print(f"{n}: candidate {k} (mvl {x.get('mvl')}): `{field}` differs")
                    ok = False
        if ok:
            same += 1
        else:
            diffs += 1
    print(f"{same} bundles identical, {diffs} differ" + (f", {added} new" if added else ""))
    return 1 if diffs else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("dir")
    s.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    a = ap.parse_args()
    sys.exit(snapshot(a) if a.mode == "snapshot" else compare(a))


if __name__ == "__main__":
    main()
