#!/usr/bin/env python3
"""Snapshots and compares the compiled bundles (host program + PTX) of every example
case of scripts/gpu_cases.py and every NPBench kernel (with all tuning candidates), and
the CPU back end's code for the same functions (the LLVM dialect, `appy-opt --emit=llvm`),
so a refactoring can show that it changed no generated code.

    python3 scripts/bundles.py snapshot DIR [--appy target/release/appy]
    python3 scripts/bundles.py compare OLD NEW
    python3 scripts/bundles.py digest DIR > tests/bundles/golden.txt
    python3 scripts/bundles.py check tests/bundles/golden.txt DIR

`digest` prints one SHA-256 per artefact over exactly what `compare` compares; `check`
compares a snapshot with such a list (the test suite's proof that the generated code
did not change: a change that means to alter code rewrites the list with `digest`, and
the diff of the list shows which artefacts changed). The list names the LLVM version it
was made with; the check refuses another one (LLVM's own code generation differs).

`compare` checks, per bundle and per tuning candidate, that the PTX text and the host
function are identical, and prints every difference; it exits non-zero if there is one
(a case only in the new snapshot is listed as new, not as a difference).
Fields that only describe the format (the version number) are not compared, and source
locations are compared relative to the checkout (`.../examples/k.py` and
`.../benchmarks/...`), so snapshots taken in two checkouts compare equal."""
import argparse
import hashlib
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
    env = dict(os.environ, APPY_CACHE_DIR="")
    opt = a.appy_opt or os.path.join(os.path.dirname(a.appy), "appy-opt")
    cpu = {}  # (file, func, signature) -> the first case's name
    for name, f, func, sig, mvl, tune in items():
        cmd = [a.appy, "compile", f, "--func", func, "--signature", sig, "--mvl", str(mvl), "-o", os.path.join(a.dir, name + ".json")]
        if tune:
            cmd.append("--tune")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            print(f"FAIL {name}: {p.stderr.strip()}")
            failed += 1
        cpu.setdefault((f, func, sig), name)
    for (f, func, sig), name in cpu.items():
        p = subprocess.run([opt, f, "--func", func, "--signature", sig, "--emit", "llvm"], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            print(f"FAIL {name} (cpu): {p.stderr.strip()}")
            failed += 1
            continue
        with open(os.path.join(a.dir, name + ".cpu.mlir"), "w") as out:
            out.write(p.stdout)
    print(f"{len(items())} bundles and {len(cpu)} CPU modules in {a.dir}, {failed} failed")
    return 1 if failed else 0


FIELDS = ("ptx", "host", "kernels", "args", "results", "params", "mvl")


def llvm_version():
    for tool in ("llvm-config-22", "/usr/lib/llvm-22/bin/llvm-config", "llvm-config"):
        try:
            return subprocess.run([tool, "--version"], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            continue
    return "unknown"


def digests(d):
    """{artefact file name: SHA-256 of what `compare` compares}."""
    out = {}
    for n in sorted(os.listdir(d)):
        path = os.path.join(d, n)
        if n.endswith(".json"):
            b = json.load(open(path))
            fields = [{f: relative_locations(c.get(f)) for f in FIELDS} for c in candidates(b)]
            data = json.dumps(fields, sort_keys=True).encode()
        elif n.endswith(".cpu.mlir"):
            data = open(path, "rb").read()
        else:
            continue
        out[n] = hashlib.sha256(data).hexdigest()
    return out


def digest(a):
    print(f"# llvm {llvm_version()}")
    for n, h in digests(a.dir).items():
        print(f"{n} {h}")
    return 0


def check(a):
    want = {}
    version = None
    for line in open(a.golden):
        line = line.strip()
        if line.startswith("# llvm "):
            version = line[len("# llvm "):]
        elif line and not line.startswith("#"):
            n, h = line.split()
            want[n] = h
    have_version = llvm_version()
    if version != have_version:
        print(f"{a.golden} was made with LLVM {version}, this is LLVM {have_version}: LLVM's own code "
              f"generation may differ; compare snapshots of both builds with `compare`, then rewrite the "
              f"list with `python3 scripts/bundles.py digest DIR > {a.golden}`")
        return 1
    have = digests(a.dir)
    bad = 0
    for n in sorted(set(want) | set(have)):
        if n not in have:
            print(f"{n}: missing from the snapshot")
            bad += 1
        elif n not in want:
            print(f"{n}: not in {a.golden} (a new case: add its line with `digest`)")
            bad += 1
        elif want[n] != have[n]:
            print(f"{n}: generated code differs (see `compare` against a snapshot of the previous build)")
            bad += 1
    same = sum(1 for n in want if have.get(n) == want[n])
    print(f"{same} of {len(want)} artefacts identical to {a.golden}" + (f"; {bad} differ, are missing or are new" if bad else ""))
    return 1 if bad else 0


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
        if not (n.endswith(".json") or n.endswith(".cpu.mlir")):
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
        if n.endswith(".cpu.mlir"):
            if open(po).read() == open(pn).read():
                same += 1
            else:
                print(f"{n}: the CPU code differs (diff the two files)")
                diffs += 1
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
    print(f"{same} artefacts identical, {diffs} differ" + (f", {added} new" if added else ""))
    return 1 if diffs else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("dir")
    s.add_argument("--appy", default=os.path.join(ROOT, "target", "release", "appy"))
    s.add_argument("--appy-opt", default=None, help="default: appy-opt beside --appy")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    d = sub.add_parser("digest")
    d.add_argument("dir")
    k = sub.add_parser("check")
    k.add_argument("golden")
    k.add_argument("dir")
    a = ap.parse_args()
    sys.exit({"snapshot": snapshot, "compare": compare, "digest": digest, "check": check}[a.mode](a))


if __name__ == "__main__":
    main()
