"""Whole-program generator for the differential fuzzer (`fuzz.py`), in the style of Csmith
and YARPGen: valid, deterministic, race-free APPy programs whose only meaning is their
sequential CPython + NumPy meaning.

``generate(seed, k, attempt=0)`` returns the text of program ``k`` of ``seed`` (always
the same text). A program is a module: ``import numpy as np``, ``import appy``, a
``# wholeprog-meta: {json}`` line (parameters and the call signatures to run), and one
``@appy.jit`` function ``f``. The generator keeps, while it writes the program:

* array identities (``a, b = b, a``, ``tmp = a; a = b; b = tmp``, ``d = a``): a parallel
  loop writes only elements of the arrays it owns at its own index (``w[i]``, row
  ``W[i, :]``) and reads those only there; other arrays are read anywhere in bounds;
  reductions go through ``shared``/``prange`` scalars and atomics only;
* index ranges: every subscript is in bounds for every signature (loop variables of
  ``range(lo, n - hi, step)`` index with offsets up to ``lo``/``hi``; sizes may be 0);
* magnitudes (`genexpr`): no integer overflow (even in int32), no float32 overflow,
  nonzero divisors, no int conversion of NaN.

Coverage: host code between loops (scalar and tuple assignments, swaps in time loops,
aliases, arrays allocated with ``np.zeros/ones/full/empty/empty_like/zeros_like`` and
returned, whole-array statements, guarded element writes, sequential loops with carried
dependences), integer arithmetic with negative operands (``** // % >> << & | ^``,
``int / int``), int/float promotion with weak Python scalars, loops with steps
(positive, negative, offset starts), nested sequential and simd loops inside parallel
ones, if/elif/else and conditional expressions, ``#pragma parallel for``, ``prange``,
``#pragma simd``, ``shared(s)`` reductions, ``#pragma atomic`` and ``prange`` atomic
updates, nested parallel grids, float32/float64/int32/int64 arrays, sizes 0, 1, 2, 7,
31, 97, 257, 1000, 4099.
"""
import json
import random

from genexpr import Ex, ExprGen, join

from genloops import FCAP, ICAP, KB, NMAX, XB, Arr, LoopStmts, text_cost  # noqa: F401


class Ctx:
    """What an expression may read at one point of the program."""

    def __init__(self, g, loops, scalars, owned, excluded, npos):
        self.g = g
        self.loops = loops          # [(var, dim, lo, hi)]
        self.scalars = scalars      # {name: Ex}
        self.owned = owned          # {ident: index text}
        self.excluded = excluded    # identities that may not be read here
        self.npos = npos            # n >= 1 is known here

    def loop_var(self):
        return self.loops[-1][0] if self.loops else None

    def int_param(self):
        return Ex("k", "pi", KB)

    def dim_pos(self, d):
        return d in ("m", "1") or self.npos or any(l[1] == "n" for l in self.loops)

    def index(self, d):
        """A subscript for an axis of size ``d`` that is in bounds here, or None."""
        r = self.g.r
        c = []
        for v, vd, lo, hi in self.loops:
            if vd == d:
                c += [v, v, f"{d} - 1 - {v}", f"{v} // 2", f"({v} * 3 + 1) % {d}"]
                if lo:
                    c.append(f"{v} - {r.randint(1, lo)}")
                if hi:
                    c.append(f"{v} + {r.randint(1, hi)}")
            elif self.dim_pos(d) and d != "1":
                c.append(f"{v} % {d}")
        if self.dim_pos(d):
            c += ["0", "-1", f"{d} - 1"] if d != "1" else ["0"]
        return r.choice(c) if c else None

    def element(self, a):
        if a.ident in self.excluded:
            return None
        if a.ident in self.owned:
            return f"{a.name}[{self.owned[a.ident]}]"
        idx = [self.index(d) for d in a.dims]
        if any(i is None for i in idx):
            return None
        return f"{a.name}[{', '.join(idx)}]"

    def leaves(self):
        g = self.g
        out = [Ex("k", "pi", KB), Ex("x", "f", XB)]
        out += list(self.scalars.values())
        out += [Ex(v, "pi", NMAX) for v, *_ in self.loops]
        arrs = list(g.arrs.values())
        g.r.shuffle(arrs)
        for a in arrs[:4]:
            s = self.element(a)
            if s:
                out.append(Ex(s, "ni" if a.kind == "i" else "f", a.bound))
                out.append(Ex(s, "ni" if a.kind == "i" else "f", a.bound))
        return out


#: Constructs that ``exclude`` can leave out (for triage only: by default every program
#: may contain all of them). 'rebind': swaps and rebinding of array names in time loops;
#: 'intpow': Python int ** negative int; 'prange_acc': ``acc[0] += e`` in ``prange``.
EXCLUDABLE = ("rebind", "intpow", "prange_acc")


class Gen(LoopStmts):
    """One program: parameters, host statements (here) and loops (`LoopStmts`)."""

    def __init__(self, seed, k, attempt=0, exclude=()):
        self.r = random.Random(f"wholeprog:{seed}:{k}:{attempt}")
        self.exclude = frozenset(exclude)
        self.inexact_names = set()
        self.e = ExprGen(self.r, self.exclude, self.inexact_names)
        self.arrs = {}
        self.next_ident = 0
        self.nscal = 0
        self.nlocal = 0
        self.ntmp = 0
        self.two_d = False
        self.big_ok = True
        self.scalars = {}
        self.in_time = False

    # -- names ---------------------------------------------------------------------
    def mark(self, name, src=True):
        """Marks ``name`` (a scalar, or an array and its aliases) as holding values that
        may differ from NumPy's by rounding, when ``src`` (an `Ex`, a text or a bool)
        does."""
        if not (src if isinstance(src, bool) else self.e.inexact(src)):
            return
        self.inexact_names.add(name)
        a = self.arrs.get(name)
        if a is not None:
            for x in self.arrs.values():
                if x.ident == a.ident:
                    self.inexact_names.add(x.name)

    def new_ident(self):
        self.next_ident += 1
        return self.next_ident

    def fresh(self, prefix):
        self.ntmp += 1
        return f"{prefix}{self.ntmp}"

    # -- parameters and signatures ---------------------------------------------------
    def params(self):
        r = self.r
        groups = ["F", "I"] + (["G"] if r.random() < 0.35 else []) + (["J"] if r.random() < 0.25 else [])
        specs = []
        for name in ["a", "b", "c"][: r.randint(1, 3)]:
            specs.append((name, "f", ("n",), r.choice([g for g in groups if g in "FG"])))
        for name in ["p", "q"][: r.randint(0, 2)]:
            specs.append((name, "i", ("n",), r.choice([g for g in groups if g in "IJ"])))
        if r.random() < 0.35:
            self.two_d = True
            specs.append(("A", "f", ("m", "n"), "F"))
            if r.random() < 0.4:
                specs.append(("P", "i", ("m", "n"), "I"))
        for name, kind, dims, grp in specs:
            self.arrs[name] = Arr(name, kind, dims, grp, self.new_ident(),
                                  2.0 if kind == "f" else 50, param=True)
        self.groups = sorted({s[3] for s in specs})
        return specs

    def signatures(self, body):
        """Four calls: float64/int64, float32/int32, mixed dtypes, and the first call's
        dtypes with other sizes and scalars (no new compile). Sizes are limited by the
        oracle's cost (statements executed per element of n)."""
        r = self.r
        per_n = text_cost(body)
        fits = lambda n: n * per_n <= 30000  # noqa: E731
        if self.two_d:
            big, small, ms = [31, 97, 130], [0, 1, 2, 7], [1, 2, 3, 5, 13]
        else:
            big, small, ms = [97, 257], [0, 1, 2, 7, 31], [1, 2, 3, 5, 13]
        big = [n for n in big if fits(n)] or [min(big)]
        huge = [n for n in (1000, NMAX) if n * per_n <= 80000 and not self.two_d] or [max(big)]

        def x_spec(kind):
            v = r.choice([0.75, -1.25, 1.5, -0.5, 2.0, 0.3])
            return [kind, v if kind != "int" else r.choice([-2, -1, 1, 2])]

        def sig(dt, n):
            return {"dtypes": dt, "n": n, "m": r.choice(ms), "k": r.randint(-KB, KB),
                    "x": x_spec(r.choice(["float", "float", "f32", "f64", "int"]))}

        f64 = {g: ("float64" if g in "FG" else "int64") for g in self.groups}
        f32 = {g: ("float32" if g in "FG" else "int32") for g in self.groups}
        mix = {g: r.choice(["float32", "float64"] if g in "FG" else ["int32", "int64"]) for g in self.groups}
        sigs = [sig(f64, r.choice(big)), sig(f32, r.choice(big + small)), sig(mix, r.choice(small + big)),
                sig(f64, r.choice(small + huge))]
        sigs[3]["x"] = [sigs[0]["x"][0], sigs[3]["x"][1] if sigs[0]["x"][0] != "int" else -sigs[0]["x"][1]]
        sigs[1]["k"] = r.choice([-3, -2, -1])   # always one negative k
        return sigs

    # -- program ---------------------------------------------------------------------
    def program(self):
        specs = self.params()
        body = []
        nstm = self.r.randint(3, 7)
        for _ in range(nstm):
            body += self.host_stmt(1, top=True)
        body += self.ret()
        params = [{"name": n, "kind": k, "dims": list(d), "group": g} for n, k, d, g in specs]
        meta = {"params": params, "sigs": self.signatures(body)}
        names = [s[0] for s in specs] + ["n", "m", "k", "x"]
        head = ["import numpy as np", "import appy", "",
                "# wholeprog-meta: " + json.dumps(meta, separators=(",", ":")), "", "",
                "@appy.jit", f"def f({', '.join(names)}):"]
        return "\n".join(head + body) + "\n"

    def ctx(self, loops=(), owned=None, excluded=(), npos=False, scalars=None):
        return Ctx(self, list(loops), dict(self.scalars if scalars is None else scalars),
                   owned or {}, set(excluded), npos)

    def ind(self, lvl):
        return "    " * lvl

    # -- host statements ----------------------------------------------------------------
    def host_stmt(self, lvl, top=False):
        r = self.r
        kinds = ["scalar", "par", "par", "par", "par", "update", "guarded", "seq", "simd", "hostif"]
        if top:
            kinds += ["time", "time", "alloc", "alloc", "alias", "whole", "tuple"]
        if top and not self.in_time and self.two_d:
            kinds += ["grid"]
        kind = r.choice(kinds)
        return getattr(self, "st_" + kind)(lvl)

    def st_scalar(self, lvl):
        e = self.e.expr(self.ctx(), None, 2)
        name = self.fresh("s")   # never a name used before, even in a branch
        self.scalars[name] = Ex(name, e.t if e.t != "ni" else "ni", e.b, e.nan)
        self.mark(name, e)
        return [f"{self.ind(lvl)}{name} = {e.s}"]

    def st_update(self, lvl):
        cands = [s for s in self.scalars.values() if not s.nan]
        if not cands:
            return self.st_scalar(lvl)
        s = self.r.choice(cands)
        ctx = self.ctx()
        if s.is_int:
            e = self.e.expr(ctx, "int", 1)
            if e.b > 1e6:
                e = Ex("1", "pi", 1)
            s2 = Ex(s.s, join(s.t, e.t), 1000)
            line = f"{s.s} = ({s.s} + {e.s}) % {self.r.choice(['1000', '(-999)', '7'])}"
        else:
            e = self.e.expr(ctx, None, 1)
            s2 = Ex(s.s, "f", 2 * max(s.b, e.b), e.nan)
            line = f"{s.s} = {s.s} * 0.5 + {e.s}" if self.r.random() < 0.6 else f"{s.s} += {e.s}"
            if "+=" in line:
                s2.b = s.b + e.b * (4 if self.in_time else 1)
        if s2.b > 1e12:
            return []
        self.scalars[s.s] = s2
        self.mark(s.s, e)
        return [self.ind(lvl) + line]

    def st_tuple(self, lvl):
        ints = [s for s in self.scalars.values() if s.is_int]
        flts = [s for s in self.scalars.values() if not s.is_int]
        for grp in (ints, flts):
            if len(grp) >= 2:
                a, b = self.r.sample(grp, 2)
                e = self.e.expr(self.ctx(), "int" if a.is_int else "float", 1)
                if (a.is_int and e.b > 1e5) or e.nan != a.nan:
                    e = Ex("1" if a.is_int else "1.0", "pi" if a.is_int else "f", 1)
                self.scalars[a.s] = Ex(a.s, join(a.t, b.t), max(a.b, b.b), a.nan or b.nan)
                self.scalars[b.s] = Ex(b.s, join(a.t, e.t), a.b + e.b, a.nan or b.nan or e.nan)
                both = self.e.inexact(f"{a.s} {b.s} {e.s}")
                self.mark(a.s, both)
                self.mark(b.s, both)
                return [f"{self.ind(lvl)}{a.s}, {b.s} = {b.s}, {a.s} + {e.s}"]
        n1, n2 = self.fresh("s"), self.fresh("s")
        self.scalars[n1] = Ex(n1, "pi", KB + 3)
        self.scalars[n2] = Ex(n2, "f", XB * 2)
        return [f"{self.ind(lvl)}{n1}, {n2} = k + 3, x * 2"]

    def store(self, a, e):
        """Wrap ``e`` so that what is stored into array ``a`` stays within the cap; marks
        ``a`` when what is stored may differ from NumPy's value by rounding."""
        r = self.r
        if a.kind == "i":
            if e.b <= ICAP:
                return e
            w = r.choice([f"({e.s}) % 1000", f"({e.s}) % (-997)", f"max(min({e.s}, 1000), -1000)",
                          f"(({e.s}) & 1023) - 512"])
            return Ex(w, e.t, ICAP)
        if e.b <= FCAP:
            self.mark(a.name, e)
            return e
        w = r.choice([f"np.tanh({e.s})", f"np.minimum(np.maximum({e.s}, -100.0), 100.0)",
                      f"np.fmod({e.s}, 50.0)" if not self.e.inexact(e) else f"np.tanh({e.s})",
                      f"({e.s}) / (1.0 + abs({e.s}))"])
        self.mark(a.name, w)
        return Ex(w, "f", 100.0, e.nan)

    def rhs_for(self, a, ctx, depth=2):
        e = self.e.expr(ctx, "int" if a.kind == "i" else None, depth)
        return self.store(a, e)

    def bump(self, a, e):
        """After a store of ``e`` into ``a`` (and its aliases)."""
        b = FCAP if self.in_time and a.kind == "f" else (ICAP if self.in_time else max(a.bound, e.b))
        for x in self.arrs.values():
            if x.ident == a.ident:
                x.bound = max(x.bound, b)

    def st_guarded(self, lvl):
        """``if n > 0: a[0] = ...`` (host element writes and reads)."""
        fl = [a for a in self.arrs.values() if a.dims == ("n",)]
        if not fl:
            return self.st_scalar(lvl)
        a = self.r.choice(fl)
        idx = self.r.choice(["0", "-1", "n - 1", "n // 2"])
        ctx = self.ctx(npos=True)
        e = self.rhs_for(a, ctx, 1)
        self.bump(a, e)
        return [f"{self.ind(lvl)}if n > 0:", f"{self.ind(lvl + 1)}{a.name}[{idx}] = {e.s}"]

    def st_hostif(self, lvl):
        """if/elif/else in host code around loops (scalars defined inside stay inside)."""
        r = self.r
        saved = dict(self.scalars)
        cnd = r.choice(["k > 0", "k % 2 == 0", "x < 0.5", "n > 5", "k >= -1 and n != 2"])
        out = [f"{self.ind(lvl)}if {cnd}:"] + self.host_stmt(lvl + 1)
        self.scalars = dict(saved)
        if r.random() < 0.4:
            out += [f"{self.ind(lvl)}elif k < -2:"] + self.host_stmt(lvl + 1)
            self.scalars = dict(saved)
        if r.random() < 0.6:
            out += [f"{self.ind(lvl)}else:"] + self.host_stmt(lvl + 1)
        self.scalars = self.merge(saved, self.scalars)
        return out

    def merge(self, before, after):
        """Scalars after a branch: those defined before, with the wider bound."""
        out = {}
        for k, v in before.items():
            w = after.get(k, v)
            out[k] = Ex(k, join(v.t, w.t), max(v.b, w.b), v.nan or w.nan)
        return out

    def st_alias(self, lvl):
        cands = [a for a in self.arrs.values() if a.dims != ("1",)]
        if not cands:
            return []
        a = self.r.choice(cands)
        nm = self.fresh("al")
        b = Arr(nm, a.kind, a.dims, a.dtype, a.ident, a.bound)
        a.noswap = b.noswap = True
        self.arrs[nm] = b
        self.mark(nm, a.name)
        out = [f"{self.ind(lvl)}{nm} = {a.name}"]
        if a.dims == ("n",):
            ctx = self.ctx([("i", "n", 0, 0)], {a.ident: "i"})
            e = self.rhs_for(a, ctx)
            self.bump(a, e)
            e = Ex(e.s.replace(f"{a.name}[i]", f"{nm}[i]"), e.t, e.b)
            out += ["#pragma parallel for".join([self.ind(lvl), ""]), f"{self.ind(lvl)}for i in range(n):",
                    f"{self.ind(lvl + 1)}{self.r.choice([nm, a.name])}[i] = {e.s}"]
        return out

    def st_alloc(self, lvl):
        """A new array in host code, initialised, often returned at the end."""
        r = self.r
        nm = f"w{self.nlocal}"
        self.nlocal += 1
        one = [a for a in self.arrs.values() if a.dims == ("n",)]
        two = [a for a in self.arrs.values() if a.dims == ("m", "n")]
        c = r.random()
        fill = False
        if c < 0.3 and one:
            src = r.choice(one)
            fn = r.choice(["np.empty_like", "np.zeros_like", "np.ones_like"])
            a = Arr(nm, src.kind, ("n",), src.dtype, self.new_ident(), 1.0)
            text = f"{fn}({src.name})"
            fill = fn == "np.empty_like"
        elif c < 0.4 and two:
            a = Arr(nm, "f", ("m", "n"), "float64", self.new_ident(), 0.0)
            text = "np.zeros((m, n))"
        else:
            kind, dt, dts = r.choice([("f", "float64", ""), ("f", "float32", ", dtype=np.float32"),
                                      ("i", "int64", ", dtype=np.int64"), ("i", "int32", ", dtype=np.int32"),
                                      ("f", "float64", "")])
            fn = r.choice(["np.zeros", "np.ones", "np.empty", "np.full"])
            a = Arr(nm, kind, ("n",), dt, self.new_ident(), 1.0)
            if fn == "np.full":
                v = "-3" if kind == "i" else "1.5"
                text = f"np.full(n, {v}{dts})"
                a.bound = 3
            else:
                text = f"{fn}(n{dts})"
            fill = fn == "np.empty"
        self.arrs[nm] = a
        self.locals = getattr(self, "locals", []) + [nm]
        out = [f"{self.ind(lvl)}{nm} = {text}"]
        if fill or r.random() < 0.6:
            if a.dims == ("n",):
                ctx = self.ctx([("i", "n", 0, 0)], {a.ident: "i"}, excluded={a.ident} if fill else ())
                e = self.rhs_for(a, ctx)
                self.bump(a, e)
                out += [f"{self.ind(lvl)}#pragma parallel for", f"{self.ind(lvl)}for i in range(n):",
                        f"{self.ind(lvl + 1)}{nm}[i] = {e.s}"]
            else:
                out += self.st_par(lvl, force_dim="m")
        return out

    def st_whole(self, lvl):
        """Whole-array statements: ``w = a * 2.0 + b``, ``a *= 0.5``, ``b[:] = a``, sums."""
        r = self.r
        one = [a for a in self.arrs.values() if a.dims == ("n",)]
        if not one:
            return self.st_scalar(lvl)
        c = r.random()
        a = r.choice(one)
        if c < 0.35:
            b = r.choice(one)
            nm = f"w{self.nlocal}"
            self.nlocal += 1
            kind = "f" if "f" in (a.kind, b.kind) else "i"
            lit = r.choice(["2.0", "0.5", "x"]) if kind == "f" else r.choice(["3", "(-2)", "k"])
            op = r.choice(["+", "-", "*"])
            self.arrs[nm] = Arr(nm, kind, ("n",), f"expr{nm}", self.new_ident(),
                                a.bound * (KB if kind == "i" else XB) + b.bound)
            if self.arrs[nm].bound > 10 * (FCAP if kind == "f" else ICAP):
                del self.arrs[nm]
                return []
            self.locals = getattr(self, "locals", []) + [nm]
            self.mark(nm, f"{a.name} {b.name}")
            return [f"{self.ind(lvl)}{nm} = {a.name} * {lit} {op} {b.name}"]
        if c < 0.55 and a.kind == "f":
            self.bump(a, Ex("", "f", a.bound * 2))
            return [f"{self.ind(lvl)}{a.name} *= {r.choice(['0.5', '-1.5', 'x'])}"]
        if c < 0.7:
            b = r.choice(one)
            if b.ident == a.ident or (b.kind == "i" and a.kind == "f"):
                return []
            self.bump(b, Ex("", "f", a.bound))
            self.mark(b.name, a.name)
            return [f"{self.ind(lvl)}{b.name}[:] = {a.name}"]
        nm = self.fresh("s")
        fn = r.choice(["np.sum", "np.sum", "np.mean"]) if a.kind == "f" else "np.sum"
        self.mark(nm, a.kind == "f" or self.e.inexact(a.name))
        if fn == "np.mean":
            self.scalars[nm] = Ex(nm, "f", a.bound, False)
            return [f"{self.ind(lvl)}{nm} = {fn}({a.name}) if n > 0 else 0.0"]
        self.scalars[nm] = Ex(nm, "ni" if a.kind == "i" else "f", a.bound * NMAX)
        return [f"{self.ind(lvl)}{nm} = {fn}({a.name})"]

    def ret(self):
        r = self.r
        items = []
        locs = [n for n in getattr(self, "locals", []) if n in self.arrs]
        if locs and r.random() < 0.8:
            items.append(r.choice(locs))
        scal = [s for s in self.scalars]
        if scal and r.random() < 0.6:
            items.append(r.choice(scal))
        if r.random() < 0.2:
            items.append(r.choice(list(self.arrs)))
        accs = [n for n, a in self.arrs.items() if a.dims == ("1",)]
        if accs and r.random() < 0.7:
            items.append(r.choice(accs))
        if not items:
            return []
        return [f"    return {', '.join(items)}"]


def generate(seed, k, attempt=0, exclude=()):
    """The text of program ``k`` of ``seed`` (``attempt`` > 0: a replacement for a program
    whose oracle raised; ``exclude``: constructs left out, see `EXCLUDABLE`)."""
    # Marks are made where a value is stored, but a loop may read an element before the
    # statement that makes it inexact (the next time step reads what the last one wrote).
    # So the program is generated again with every name the last try marked already
    # marked from the start, until no new name is marked (a fixed point).
    known = set()
    for _ in range(8):
        g = Gen(seed, k, attempt, exclude)
        g.inexact_names.update(known)
        text = g.program()
        if g.inexact_names <= known:
            return text
        known |= g.inexact_names
    raise Unsettled(f"wholeprog: program {seed}:{k}:{attempt}: inexact names do not settle")


class Unsettled(Exception):
    """`generate` found no fixed point of the inexact names (the attempt is skipped)."""


def meta_of(text):
    """The ``# wholeprog-meta:`` record of a program text."""
    for line in text.splitlines():
        if line.startswith("# wholeprog-meta: "):
            return json.loads(line[len("# wholeprog-meta: "):])
    raise ValueError("no wholeprog-meta line")


#: Constructs counted by ``python3 gen.py --stats SEED COUNT`` (regular expressions).
FEATURES = {
    "time loop": r"for t in range", "swap a, b = b, a": r"^\s+(\w+), (\w+) = \2, \1$",
    "swap via tmp": r"tmp\d+ = ", "alias d = a": r"al\d+ = \w+$", "np.zeros/ones/full": r"np\.(zeros|ones|full)\(",
    "np.empty(_like)": r"np\.empty", "*_like": r"_like\(", "returned local array": r"return .*w\d",
    "tuple assignment": r"^\s+s\d+, s\d+ = ", "whole-array statement": r"= \w+ \* \S+ [-+*] \w+$|\w+ \*= |\[:\] = ",
    "np.sum/np.mean": r"np\.(sum|mean)\(", "**": r"\*\* ", "int ** negative": r"\d\)? \*\* (k|\(-)",
    "//": r" // ", "%": r" % ", ">>": r" >> ", "<<": r" << ", "&": r" & ", "|": r" \| ", "^": r" \^ ",
    "true division": r" / ", "negative literal": r"\(-\d", "int()": r"\bint\(", "np.float32()": r"np\.float32\(",
    "#pragma parallel for": r"#pragma parallel for$|#pragma parallel for shared",
    "#pragma parallel for simd": r"#pragma parallel for simd", "prange": r"appy\.prange", "#pragma simd": r"#pragma simd",
    "#pragma sequential for": r"#pragma sequential", "shared(...)": r"shared\(", "#pragma atomic": r"#pragma atomic",
    "acc[0] update": r"acc\d+\[0\] [-+]=", "nested parallel grid": r"for i in range\(m\):\n\s+#pragma parallel for\n",
    "inner loop in parallel loop": r"^\s{8,}for j in", "negative step": r"range\([^)]*, -\d\)",
    "offset start": r"range\([1-9]", "step > 1": r"range\([^)]*, [2-9]\)", "if/else in loop": r"^\s{8,}else:",
    "elif": r"elif ", "conditional expression": r" if .* else ", "and/or/not": r"\b(and|or|not)\b",
    "chained comparison": r"< \S+ <=", "builtin max/min": r"(?<!np\.)\b(max|min)\(", "np.maximum/minimum": r"np\.(maximum|minimum)",
    "math functions": r"np\.(exp|sqrt|log|tanh|sin|cos)\(", "NaN-producing sqrt/log": r"np\.(sqrt|log)\((?!abs|\(abs)",
    "host element write": r"if n > 0:", "len()/shape": r"len\(|\.shape\[", "2-D arrays": r"\bA\[|\bP\[",
}


def stats(seed, count):
    """Fraction of programs (and signatures) with each construct, and the sizes used."""
    import re
    from collections import Counter
    seen, sizes, dts, xk = Counter(), Counter(), Counter(), Counter()
    for k in range(count):
        t = generate(seed, k)
        for name, rx in FEATURES.items():
            if re.search(rx, t, re.M):
                seen[name] += 1
        for sg in meta_of(t)["sigs"]:
            sizes[sg["n"]] += 1
            xk[sg["x"][0]] += 1
            for d in sg["dtypes"].values():
                dts[d] += 1
    for name in FEATURES:
        print(f"{seen[name] / count:6.1%}  {name}")
    print("n:", dict(sorted(sizes.items())))
    print("dtypes:", dict(dts), " x passed as:", dict(xk))


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["--stats"]:
        stats(int(sys.argv[2]), int(sys.argv[3]))
        sys.exit(0)
    s = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    for k in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1):
        print(generate(s, k))
