#!/usr/bin/env python3
"""Delta-debugging shrinker for failing whole programs.

    python3 tests/wholeprog/shrink.py FILE [--mode phase1|phase2|threads|crash] [-o OUT]

Starting from a program whose appy result differs from the oracle (``phase1``), differs
or crashes only when reloaded from the persistent cache in a second process
(``phase2``), differs or crashes only when called from several threads (``threads``),
or kills the process (``crash``), it repeatedly tries smaller candidates and keeps one
whenever the same kind of failure persists:

* fewer call signatures (one, then pairs) in the meta line;
* a statement removed (with its block and the pragma above it), an if/elif/else chain
  removed, a compound statement replaced by its body, a pragma removed, ``appy.prange``
  turned into ``range``;
* an expression replaced by one of its operands or by a constant (``0``, ``1``,
  ``1.0``), a return item removed.

A candidate whose oracle raises (undefined names, out-of-range indices caught by the
strict oracle, ...) or that appy refuses is not a failure, so every step stays a valid
program. Candidates run in a child process (restarted when one crashes), each in a fresh
cache directory for ``phase2``. Writes ``OUT`` (default ``FILE`` with ``.min.py``).
"""
import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import compare as C  # noqa: E402

META = "# wholeprog-meta: "


# -------------------------------------------------------------------------------------
# Evaluating a candidate (in a child process)
# -------------------------------------------------------------------------------------
def child_serve(mode):
    """A persistent child: checks the program of every path read from stdin (phase 1)."""
    for line in sys.stdin:
        child_check(line.strip(), mode, 1)


def child_check(path, mode, phase):
    """In a child: check the program at ``path``; prints one JSON line."""
    import fuzz
    import appy  # noqa: F401
    import logging
    logging.getLogger("appy").setLevel(logging.CRITICAL)
    with open(path) as fh:
        text = fh.read()
    mod = "wp_shrink_" + re.sub(r"\W", "_", os.path.basename(path)[:-3])
    if phase == 2:
        meta = C.meta_of(text)
        order = list(reversed(range(len(meta["sigs"]))))
        res = fuzz.check_text(text, path, mod + "_p2", order=order)
    else:
        res = fuzz.check_text(text, path, mod, threads=(mode in ("threads", "crash")))
    if mode == "threads" and res["status"] == "mismatch":
        res["status"] = "mismatch" if any("phase 3" in d for d in res["diffs"]) else "other"
    if res["status"] == "mismatch" and C.reads_uninitialised(text):
        res["status"] = "invalid"   # reads np.empty memory it never wrote
    print("RESULT " + json.dumps({"status": res["status"], "kinds": sorted(C.diff_kinds(res.get("diffs", []))),
                                  "diffs": res.get("diffs", [])[:3]}), flush=True)


class Runner:
    """Runs candidates in one-shot child processes with private cache directories."""

    def __init__(self, mode, device="cpu", threads="2"):
        self.mode = mode
        self.tmp = tempfile.mkdtemp(prefix="appy-shrink-")
        os.chmod(self.tmp, 0o700)
        self.n = 0
        self.env = dict(os.environ, APPY_NUM_THREADS=str(threads), APPY_DEVICE=device,
                        PYTHONDONTWRITEBYTECODE="1")

        self.child = None

    def close(self):
        if self.child:
            self.child.kill()
            self.child.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _serve(self, path):
        """Phase 1 in the persistent child (restarted after a crash or a hang)."""
        if self.child is None:
            # No persistent cache: candidates must not load each other's specialisations.
            self.child = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--serve", "x", "--mode", self.mode],
                env=dict(self.env, APPY_CACHE_DIR=""), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True)
        ch = self.child
        ch.stdin.write(path + "\n")
        ch.stdin.flush()
        timer = __import__("threading").Timer(120, ch.kill)
        timer.start()
        try:
            while True:
                line = ch.stdout.readline()
                if not line:
                    ch.wait()
                    self.child = None
                    return {"status": "crash" if ch.returncode < 0 and ch.returncode != -9 else "hang"}
                if line.startswith("RESULT "):
                    return json.loads(line[7:])
        finally:
            timer.cancel()

    def _run(self, path, phase, cache):
        env = dict(self.env, APPY_CACHE_DIR=cache)
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path,
                                "--mode", self.mode, "--phase", str(phase)],
                               env=env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return {"status": "hang"}
        if p.returncode < 0:
            return {"status": "crash", "signal": -p.returncode}
        for line in p.stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        return {"status": "error", "stderr": p.stderr[-500:]}

    @staticmethod
    def _key(r):
        """The failure's kind: the status, and for mismatches the kinds of differences."""
        return (r["status"],) + tuple(r.get("kinds", []))

    def failure(self, text):
        """The failure kind of a candidate ('mismatch', 'crash', ...) or None."""
        self.n += 1
        path = os.path.join(self.tmp, f"cand{self.n}.py")
        with open(path, "w") as fh:
            fh.write(text)
        if self.mode == "phase1":
            r1 = self._serve(path)
            return self._key(r1) if r1["status"] in ("mismatch", "crash", "hang") else None
        cache = os.path.join(self.tmp, f"cache{self.n}")
        os.mkdir(cache, 0o700)
        try:
            r1 = self._run(path, 1, cache)
            if self.mode == "phase2":
                if r1["status"] not in ("ok", "mismatch"):
                    return None
                r2 = self._run(path, 2, cache)
                return self._key(r2) if r2["status"] in ("mismatch", "crash") else None
            return self._key(r1) if r1["status"] in ("mismatch", "crash", "hang") else None
        finally:
            shutil.rmtree(cache, ignore_errors=True)


# -------------------------------------------------------------------------------------
# Candidates
# -------------------------------------------------------------------------------------
def split(text):
    """(head lines up to and including the ``def``, body lines)."""
    lines = text.splitlines()
    d = next(i for i, ln in enumerate(lines) if ln.startswith("def f("))
    return lines[: d + 1], lines[d + 1:]


def indent(ln):
    return len(ln) - len(ln.lstrip(" "))


def block_end(body, i):
    """The index after the statement starting at line i (its indented block included)."""
    ind = indent(body[i])
    j = i + 1
    while j < len(body) and (not body[j].strip() or indent(body[j]) > ind):
        j += 1
    return j


def block_start(body, i):
    """Line i, or the first of the pragma comment lines just above it."""
    while i > 0 and body[i - 1].strip().startswith("#pragma") and indent(body[i - 1]) == indent(body[i]):
        i -= 1
    return i


def stmt_lines(body):
    return [i for i, ln in enumerate(body) if ln.strip() and not ln.strip().startswith("#")]


def removals(body):
    for i in reversed(stmt_lines(body)):
        s = body[i].strip()
        if s.startswith(("else:", "elif ")):
            continue
        a, e = block_start(body, i), block_end(body, i)
        if s.startswith("if "):   # the whole chain
            e2 = e
            while e2 < len(body) and indent(body[e2]) == indent(body[i]) and body[e2].strip().startswith(("elif ", "else:")):
                e2 = block_end(body, e2)
            if e2 != e:
                yield body[:a] + body[e2:]
        yield body[:a] + body[e:]
    for i in stmt_lines(body):   # elif/else branches
        s = body[i].strip()
        if s.startswith(("else:", "elif ")):
            yield body[:i] + body[block_end(body, i):]


def unwraps(body):
    for i in stmt_lines(body):
        s = body[i].strip()
        if s.endswith(":") and s.startswith(("if ", "for ", "else:", "elif ")):
            a, e = block_start(body, i), block_end(body, i)
            inner = [ln[4:] if ln.startswith("    ") else ln for ln in body[i + 1:e]]
            if s.startswith("for "):
                var = s.split()[1]
                inner = [f"{' ' * indent(body[i])}{var} = 0"] + inner
            yield body[:a] + inner + body[e:]


def pragma_edits(body):
    for i, ln in enumerate(body):
        s = ln.strip()
        if s.startswith("#pragma"):
            yield body[:i] + body[i + 1:]
            if "shared(" in s:
                yield body[:i] + [re.sub(r" shared\([^)]*\)", "", ln)] + body[i + 1:]
            if " simd" in s and "parallel" in s:
                yield body[:i] + [ln.replace(" simd", "")] + body[i + 1:]
        if "appy.prange(" in ln:
            yield body[:i] + [ln.replace("appy.prange(", "range(")] + body[i + 1:]


class _Simplify(ast.NodeTransformer):
    """Replaces the ``target``-th expression node (in walk order) by ``repl(node)``."""

    def __init__(self, target, choice):
        self.target, self.choice, self.count = target, choice, -1
        self.done = self.exhausted = False

    def generic_visit(self, node):
        if isinstance(node, ast.expr) and not isinstance(node, (ast.Name, ast.Constant)) and not self.done \
                and not isinstance(getattr(node, "ctx", None), ast.Store):
            self.count += 1
            if self.count == self.target:
                r = self.replacement(node)
                if r is None:
                    self.exhausted = True
                    return node
                self.done = True
                return r
        return super().generic_visit(node)

    def replacement(self, node):
        opts = []
        if isinstance(node, ast.BinOp):
            opts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            opts = [node.operand]
        elif isinstance(node, ast.IfExp):
            opts = [node.body, node.orelse]
        elif isinstance(node, ast.Call) and node.args:
            opts = list(node.args)
        elif isinstance(node, ast.BoolOp):
            opts = list(node.values)
        elif isinstance(node, ast.Compare):
            opts = [ast.Constant(True), ast.Constant(False)]
        opts += [ast.Constant(0), ast.Constant(1), ast.Constant(1.0)]
        return opts[self.choice] if self.choice < len(opts) else None


def expr_edits(body):
    for i, ln in enumerate(body):
        s = ln.strip()
        if not s or s.startswith("#"):
            continue
        header = s.endswith(":")
        if s in ("else:",):
            continue
        src = s[2:] if s.startswith("el") and s.startswith("elif ") else s
        try:
            tree = ast.parse(src + (" pass" if header else ""))
        except SyntaxError:
            continue
        for target in range(40):
            any_choice = False
            for choice in range(8):
                t2 = ast.parse(src + (" pass" if header else ""))
                tr = _Simplify(target, choice)
                t2 = tr.visit(t2)
                if not tr.done:
                    break
                any_choice = True
                try:
                    new = ast.unparse(t2).splitlines()[0]
                except Exception:  # noqa: BLE001 - a replacement that is not an expression
                    continue
                if header:
                    new = new.rstrip()
                    if new.endswith(" pass"):
                        new = new[: -len(" pass")]
                    if not new.endswith(":"):
                        continue
                if s.startswith("elif "):
                    new = "el" + new
                new = " " * indent(ln) + new
                if new != ln:
                    yield body[:i] + [new] + body[i + 1:]
            if not any_choice:
                break
        del tree


def return_edits(body):
    for i, ln in enumerate(body):
        s = ln.strip()
        if s.startswith("return ") and "," in s:
            items = [x.strip() for x in s[len("return "):].split(",")]
            for j in range(len(items)):
                rest = items[:j] + items[j + 1:]
                yield body[:i] + [" " * indent(ln) + "return " + ", ".join(rest)] + body[i + 1:]


def same_failure(orig, cand):
    """Whether a candidate fails as the original does: the same status, and (for
    mismatches) kinds of differences among the original's."""
    if cand is None or cand[0] != orig[0]:
        return False
    return len(orig) == 1 or (len(cand) > 1 and set(cand[1:]) <= set(orig[1:]))


def with_sigs(text, sigs):
    meta = C.meta_of(text)
    meta["sigs"] = sigs
    return "\n".join(META + json.dumps(meta, separators=(",", ":")) if ln.startswith(META) else ln
                     for ln in text.splitlines()) + "\n"


def shrink_text(text, runner, log=None):
    """The smallest text found that still fails the way ``text`` does."""
    kind = runner.failure(text)
    if kind is None:
        if log:
            log("    shrink: the failure does not reproduce in a child process")
        return text
    say = log or (lambda *_: None)
    sigs = C.meta_of(text)["sigs"]
    if len(sigs) > 1:
        tried = [[s] for s in sigs] + [[a, b] for i, a in enumerate(sigs) for b in sigs[i + 1:]]
        for sub in tried:
            cand = with_sigs(text, sub)
            if same_failure(kind, runner.failure(cand)):
                text = cand
                say(f"    shrink: {len(sub)} signature(s)")
                break
    changed = True
    while changed:
        changed = False
        for gen_edits in (removals, unwraps, pragma_edits, return_edits, expr_edits):
            skip = 0   # candidates of this pass already tried (and failed) at this text
            while True:
                head, body = split(text)
                found = False
                for idx, cand_body in enumerate(gen_edits(body)):
                    if idx < skip:
                        continue
                    if not any(ln.strip() and not ln.strip().startswith("#") for ln in cand_body):
                        continue
                    cand = "\n".join(head + cand_body) + "\n"
                    if len(cand) >= len(text) and gen_edits is not pragma_edits:
                        continue
                    if same_failure(kind, runner.failure(cand)):
                        text, found, changed, skip = cand, True, True, idx
                        say(f"    shrink: {len(split(text)[1])} lines ({gen_edits.__name__})")
                        break
                if not found:
                    break
    return text


def shrink_file(path, mode, out=None, device="cpu", threads="2", log=None):
    """Shrinks the program in ``path``; writes and returns the minimal program's path."""
    with open(path) as fh:
        text = fh.read()
    runner = Runner(mode, device, threads)
    try:
        small = shrink_text(text, runner, log)
    finally:
        runner.close()
    out = out or (path[:-3] + ".min.py")
    with open(out, "w") as fh:
        fh.write(small)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--mode", default="phase1", choices=["phase1", "phase2", "threads", "crash"])
    ap.add_argument("-o", "--out", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--phase", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_check(args.file, args.mode, args.phase)
        return 0
    if args.serve:
        child_serve(args.mode)
        return 0
    out = shrink_file(args.file, args.mode, args.out, args.device, log=print)
    with open(out) as fh:
        print(fh.read())
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
