"""Loops for the whole-program generator (`gen.py`): parallel loops (``#pragma parallel
for [simd]``, ``prange``) with the arrays they own, ``shared`` reductions and atomic
updates; inner sequential and simd loops (reductions into private scalars, row writes of
2-D arrays); nested parallel grids; sequential loops with carried dependences; host
``simd`` loops; time loops with swaps of array names. `LoopStmts` is a mixin of
`gen.Gen`."""
from genexpr import Ex, join

FCAP = 1e4      # float array elements stay within this
ICAP = 1000     # int array elements stay within this
KB = 4          # |k| <= KB
XB = 2.0        # |x| <= XB
NMAX = 4099     # largest n


class Arr:
    """An array name: kind 'f'/'i', dims ('n',), ('m', 'n') or ('1',), dtype spec (a
    group letter or a fixed dtype), identity (shared by aliases) and value bound."""

    def __init__(self, name, kind, dims, dtype, ident, bound, param=False):
        self.name, self.kind, self.dims, self.dtype = name, kind, dims, dtype
        self.ident, self.bound, self.param = ident, bound, param
        self.noswap = False


class LoopStmts:
    """Loop statements; ``self`` is a `gen.Gen`."""

    def range_text(self, d, lo, hi, step, neg):
        dn = d
        if d == "n" and self.r.random() < 0.3:
            cands = [a for a in self.arrs.values() if a.dims == ("n",)]
            if cands:
                dn = self.r.choice([f"len({cands[0].name})", f"{cands[0].name}.shape[0]"])
        if d == "m" and self.r.random() < 0.3:
            cands = [a for a in self.arrs.values() if a.dims == ("m", "n")]
            if cands:
                dn = f"{cands[0].name}.shape[0]"
        end = f"{dn} - {hi}" if hi else dn
        if not neg:
            if lo == 0 and step == 1:
                return f"range({end})"
            if step == 1:
                return f"range({lo}, {end})"
            return f"range({lo}, {end}, {step})"
        first = f"{dn} - 1 - {hi}" if hi else f"{dn} - 1"
        return f"range({first}, {lo - 1}, {-step})"

    def loop_shape(self):
        r = self.r
        lo = r.choice([0, 0, 0, 1, 2])
        hi = r.choice([0, 0, 0, 1, 3])
        step = r.choice([1, 1, 1, 2, 3])
        neg = r.random() < 0.2
        return lo, hi, step, neg

    def st_par(self, lvl, force_dim=None):
        r = self.r
        one = [a for a in self.arrs.values() if a.dims == ("n",)]
        two = [a for a in self.arrs.values() if a.dims == ("m", "n")]
        dim = force_dim or ("m" if two and r.random() < 0.35 else "n")
        pool = two if dim == "m" else one
        if not pool:
            return self.st_scalar(lvl)
        owned_arrs = r.sample(pool, min(len(pool), r.choice([1, 1, 2])))
        var = "i"
        lo, hi, step, neg = self.loop_shape()
        kind = r.choice(["pf", "pf", "pfs", "prange", "prange"])
        out = []
        pre_scalars = dict(self.scalars)
        owned_ids = {a.ident for a in owned_arrs}
        owned = {a.ident: var for a in owned_arrs} if dim == "n" else {}
        loops = [(var, dim, lo, hi)]
        # reductions
        shared = []
        atomic = None
        if r.random() < 0.4:
            for _ in range(r.randint(1, 2)):
                nm = self.fresh("r")
                init, t = r.choice([("0.0", "f"), ("0", "pi"), ("0.0", "f")])
                shared.append((nm, t))
                out.append(f"{self.ind(lvl)}{nm} = {init}")
        if r.random() < 0.3 and not self.in_time and not (kind == "prange" and "prange_acc" in self.exclude):
            # a new accumulator array only at the function's top level (appy allocates
            # arrays only there); elsewhere an existing array is the target
            free = [a for a in one if a.ident not in owned_ids and
                    all(x.ident != a.ident or x is a for x in self.arrs.values())]
            if free and (r.random() < 0.5 or lvl != 1) and dim == "n":
                atomic = (r.choice(free), None)
            elif lvl == 1:
                nm = self.fresh("acc")
                kind_a = r.choice(["f", "f", "i"])
                dt = ", dtype=np.int64" if kind_a == "i" else ""
                out.append(f"{self.ind(lvl)}{nm} = np.zeros(1{dt})")
                a = Arr(nm, kind_a, ("1",), "int64" if kind_a == "i" else "float64", self.new_ident(), 0)
                a.noswap = True
                self.arrs[nm] = a
                atomic = (a, "0")
        # the loop header
        rng_text = self.range_text(dim, lo, hi, step, neg)
        if kind == "prange":
            out.append(f"{self.ind(lvl)}for {var} in appy.{rng_text.replace('range', 'prange', 1)}:")
        else:
            cl = f" shared({', '.join(s for s, _ in shared)})" if shared else ""
            out.append(f"{self.ind(lvl)}#pragma parallel for{' simd' if kind == 'pfs' else ''}{cl}")
            out.append(f"{self.ind(lvl)}for {var} in {rng_text}:")
        excl = {atomic[0].ident} if atomic else set()
        if dim == "m":
            excl |= owned_ids
        body = self.par_body(lvl + 1, loops, owned_arrs, owned, excl, dim, simd_ok=(kind != "pfs"))
        red = {}
        for nm, t in shared:   # no reduction variable is read inside the loop
            ctx = self.ctx(loops, owned, excl)
            c = r.random()
            if t == "f":
                e = self.e.expr(ctx, None, 2)
                if c < 0.7 or e.nan:
                    body.append(f"{self.ind(lvl + 1)}{nm} += {e.s}")
                    bnd = e.b * NMAX
                else:
                    # Python's min/max return an operand: an int one would make the float
                    # accumulator an int (int32 arithmetic, wrapping, after the loop),
                    # where appy's variable has one type, the join (a float).
                    if e.t != "f":
                        e = Ex(f"float({e.s})", "f", e.b, e.nan)
                    body.append(f"{self.ind(lvl + 1)}{nm} = {r.choice(['max', 'min'])}({nm}, {e.s})")
                    bnd = e.b
                red[nm] = Ex(nm, join("f", e.t), bnd, e.nan)
                self.mark(nm, "+=" in body[-1] or self.e.inexact(e))
            else:
                e = self.e.expr(ctx, "int", 1)
                if e.b > 10000:
                    e = Ex("1", "pi", 1)
                if c < 0.4:
                    body.append(f"{self.ind(lvl + 1)}if {self.e.cond(ctx, 0)}:")
                    body.append(f"{self.ind(lvl + 2)}{nm} += {e.s}")
                else:
                    body.append(f"{self.ind(lvl + 1)}{nm} += {e.s}")
                red[nm] = Ex(nm, join("pi", e.t), e.b * NMAX)
        if atomic:
            h, idx = atomic
            ctx = self.ctx(loops, owned, excl)
            if idx is None:
                idx = r.choice([f"{var} // 2", f"{var} % 3" if dim == "n" else "0", f"(n - 1 - {var}) // 3"])
                ints = [a for a in self.arrs.values() if a.kind == "i" and a.dims == ("n",) and a.ident not in excl]
                if ints and r.random() < 0.5:
                    el = ctx.element(ints[0])
                    if el:
                        idx = f"{el} % n"
            e = self.e.expr(ctx, "int" if h.kind == "i" else None, 1)
            if h.kind == "i" and e.b > 10000:
                e = Ex("1", "pi", 1)
            if kind != "prange":
                body.append(f"{self.ind(lvl + 1)}#pragma atomic")
            body.append(f"{self.ind(lvl + 1)}{h.name}[{idx}] {r.choice(['+=', '+=', '-='])} {e.s}")
            for x in self.arrs.values():
                if x.ident == h.ident:
                    x.bound = x.bound + e.b * NMAX
            self.mark(h.name, h.kind == "f" or self.e.inexact(e))
        # private scalars of the loop are gone after it; the reductions' results remain
        for nm in list(self.scalars):
            if nm not in pre_scalars:
                del self.scalars[nm]
        self.scalars.update(red)
        return out + body

    def par_body(self, lvl, loops, owned_arrs, owned, excl, dim, simd_ok=True):
        """The body of a parallel loop: writes to the owned arrays at the loop's index."""
        r = self.r
        out = []
        ctx = lambda: self.ctx(loops, owned, excl, scalars=self.scalars)  # noqa: E731
        var = loops[-1][0]
        if r.random() < 0.5:
            t = self.fresh("t")
            e = self.e.expr(ctx(), None, 2)
            out.append(f"{self.ind(lvl)}{t} = {e.s}")
            self.scalars[t] = Ex(t, e.t, e.b, e.nan)
            self.mark(t, e)
        for a in owned_arrs:
            if dim == "m":
                out += self.row_loop(lvl, loops, a, owned, excl, simd_ok)
                continue
            c = r.random()
            if c < 0.2 and (self.two_d or True):
                out += self.inner_reduce(lvl, loops, a, owned, excl, simd_ok)
            elif c < 0.45:
                cnd = self.e.cond(ctx(), 1)
                e1 = self.rhs_for(a, ctx())
                e2 = self.rhs_for(a, ctx())
                out.append(f"{self.ind(lvl)}if {cnd}:")
                out.append(f"{self.ind(lvl + 1)}{a.name}[{var}] = {e1.s}")
                if r.random() < 0.5:
                    e3 = self.rhs_for(a, ctx())
                    out.append(f"{self.ind(lvl)}elif {self.e.cond(ctx(), 0)}:")
                    out.append(f"{self.ind(lvl + 1)}{a.name}[{var}] = {e3.s}")
                    self.bump(a, e3)
                if r.random() < 0.7:
                    out.append(f"{self.ind(lvl)}else:")
                    out.append(f"{self.ind(lvl + 1)}{a.name}[{var}] = {e2.s}")
                self.bump(a, e1)
                self.bump(a, e2)
            elif c < 0.6:
                e = self.e.expr(ctx(), "int" if a.kind == "i" else None, 1)
                tot = Ex(e.s, e.t, a.bound + e.b, e.nan)
                if self.store(a, tot) is tot:
                    out.append(f"{self.ind(lvl)}{a.name}[{var}] {r.choice(['+=', '-='])} {e.s}")
                    self.bump(a, tot)
                else:
                    half = "* 0.5" if a.kind == "f" else "// 2"
                    w = self.store(a, Ex(f"{a.name}[{var}] {half} + {e.s}", e.t, a.bound + e.b, e.nan))
                    out.append(f"{self.ind(lvl)}{a.name}[{var}] = {w.s}")
                    self.bump(a, w)
            else:
                e = self.rhs_for(a, ctx())
                out.append(f"{self.ind(lvl)}{a.name}[{var}] = {e.s}")
                self.bump(a, e)
        return out

    def inner_reduce(self, lvl, loops, a, owned, excl, simd_ok):
        """``acc = 0; for j ...: acc += e(j)`` then ``a[i] = f(acc)``."""
        r = self.r
        var = loops[-1][0]
        acc = self.fresh("t")
        d = "m" if loops[-1][1] == "n" else "n"   # never n*n iterations (oracle time)
        lo, hi, step, neg = self.loop_shape()
        inner = loops + [("j", d, lo, hi)]
        ctx = self.ctx(inner, owned, excl)
        # An int array gets an int accumulator: a float one would be stored through
        # int(), and a float sum (reassociated under simd) one ulp below an integer
        # truncates to the next one down.
        isint = a.kind == "i"
        if isint:
            r.random()   # the draw that once chose between the two (keeps the programs)
        e = self.e.expr(ctx, "int" if isint else None, 2)
        if isint and e.b > 1e5:
            e = Ex("j", "pi", NMAX)
        out = [f"{self.ind(lvl)}{acc} = {'0' if isint else '0.0'}"]
        if simd_ok and r.random() < 0.5:
            out.append(f"{self.ind(lvl)}#pragma simd")
        out.append(f"{self.ind(lvl)}for j in {self.range_text(d, lo, hi, step, neg)}:")
        mx = (not e.nan) and r.random() < 0.25
        if mx and not isint and e.t != "f":   # float accumulator, int value: see st_par
            e = Ex(f"float({e.s})", "f", e.b, e.nan)
        if mx:
            out.append(f"{self.ind(lvl + 1)}{acc} = {r.choice(['max', 'min'])}({acc}, {e.s})")
            bnd = e.b
        else:
            out.append(f"{self.ind(lvl + 1)}{acc} += {e.s}")
            bnd = e.b * NMAX
        self.mark(acc, (not mx and not isint and e.t == "f") or self.e.inexact(e))
        val = self.store(a, Ex(acc, join("pi" if isint else "f", e.t), bnd, e.nan))
        if a.kind == "i" and not val.is_int:
            val = Ex(f"int({val.s})", "pi", val.b)
        out.append(f"{self.ind(lvl)}{a.name}[{var}] = {val.s}")
        self.bump(a, val)
        return out

    def row_loop(self, lvl, loops, a, owned, excl, simd_ok):
        """For a row-owned 2-D array: ``for j ...: W[i, j] = e``."""
        r = self.r
        var = loops[-1][0]
        lo, hi, step, neg = self.loop_shape()
        inner = loops + [("j", "n", lo, hi)]
        own = dict(owned)
        own[a.ident] = f"{var}, j"
        ctx = self.ctx(inner, own, set(excl) - {a.ident})
        e = self.rhs_for(a, ctx)
        out = []
        if simd_ok and r.random() < 0.4:
            out.append(f"{self.ind(lvl)}#pragma simd")
        out.append(f"{self.ind(lvl)}for j in {self.range_text('n', lo, hi, step, neg)}:")
        if r.random() < 0.3:
            cnd = self.e.cond(ctx, 0)
            out.append(f"{self.ind(lvl + 1)}{a.name}[{var}, j] = {e.s} if {cnd} else {a.name}[{var}, j]")
        else:
            out.append(f"{self.ind(lvl + 1)}{a.name}[{var}, j] = {e.s}")
        self.bump(a, e)
        return out

    def st_grid(self, lvl):
        """Perfectly nested parallel loops: a 2-D grid."""
        two = [a for a in self.arrs.values() if a.dims == ("m", "n")]
        if not two:
            return self.st_par(lvl)
        a = self.r.choice(two)
        own = {a.ident: "i, j"}
        ctx = self.ctx([("i", "m", 0, 0), ("j", "n", 0, 0)], own)
        e = self.rhs_for(a, ctx)
        self.bump(a, e)
        return [f"{self.ind(lvl)}#pragma parallel for", f"{self.ind(lvl)}for i in range(m):",
                f"{self.ind(lvl + 1)}#pragma parallel for", f"{self.ind(lvl + 1)}for j in range(n):",
                f"{self.ind(lvl + 2)}{a.name}[i, j] = {e.s}"]

    def st_seq(self, lvl):
        """A sequential loop with a carried dependence (valid only sequentially)."""
        r = self.r
        fl = [a for a in self.arrs.values() if a.dims == ("n",)]
        if not fl:
            return self.st_scalar(lvl)
        a = r.choice(fl)
        ctx = self.ctx([("i", "n", 1, 0)], {a.ident: "i"})
        e = self.e.expr(ctx, "int" if a.kind == "i" else None, 1)
        prev = f"{a.name}[i - 1]"
        e = self.store(a, Ex(f"{prev} {'* 0.5 ' if a.kind == 'f' else '// 2 '}+ {e.s}", e.t, 2 * (a.bound + e.b), e.nan))
        self.bump(a, e)
        if r.random() < 0.5:
            return [f"{self.ind(lvl)}for i in range(1, n):", f"{self.ind(lvl + 1)}{a.name}[i] = {e.s}"]
        return [f"{self.ind(lvl)}#pragma sequential for", f"{self.ind(lvl)}for i in range(1, n):",
                f"{self.ind(lvl + 1)}{a.name}[i] = {e.s}"]

    def st_simd(self, lvl):
        """A ``#pragma simd`` loop at host level (independent iterations)."""
        fl = [a for a in self.arrs.values() if a.dims == ("n",)]
        if not fl:
            return self.st_scalar(lvl)
        a = self.r.choice(fl)
        lo, hi, step, neg = self.loop_shape()
        ctx = self.ctx([("i", "n", lo, hi)], {a.ident: "i"})
        e = self.rhs_for(a, ctx)
        self.bump(a, e)
        return [f"{self.ind(lvl)}#pragma simd", f"{self.ind(lvl)}for i in {self.range_text('n', lo, hi, step, neg)}:",
                f"{self.ind(lvl + 1)}{a.name}[i] = {e.s}"]

    def st_time(self, lvl):
        """A time loop around parallel loops, with swaps of the arrays' names."""
        if self.in_time:
            return self.st_par(lvl)
        r = self.r
        self.in_time = True
        for a in self.arrs.values():
            a.bound = max(a.bound, FCAP if a.kind == "f" else ICAP)
        saved = dict(self.scalars)
        T = r.choice(["2", "3", "1", "abs(k) % 3 + 1", "k % 3 + 1"])
        out = [f"{self.ind(lvl)}for t in range({T}):"]
        for _ in range(r.randint(1, 3)):
            out += self.host_stmt(lvl + 1) if r.random() < 0.3 else self.st_par(lvl + 1)
        if "rebind" not in self.exclude:
            out += self.st_swap(lvl + 1)
        if r.random() < 0.3:
            out += self.st_par(lvl + 1)
        self.in_time = False
        self.scalars = self.merge(saved, self.scalars)
        return out

    def st_swap(self, lvl):
        r = self.r
        by = {}
        for a in self.arrs.values():
            if a.noswap or sum(x.ident == a.ident for x in self.arrs.values()) > 1:
                continue
            by.setdefault((a.dims, a.dtype, a.kind), []).append(a)
        pairs = [v for v in by.values() if len(v) >= 2]
        if not pairs:
            return []
        x, y = r.sample(r.choice(pairs), 2)
        both = self.e.inexact(f"{x.name} {y.name}")
        self.mark(x.name, both)
        self.mark(y.name, both)
        self.arrs[x.name], self.arrs[y.name] = y, x
        x.name, y.name = y.name, x.name
        if r.random() < 0.5:
            return [f"{self.ind(lvl)}{x.name}, {y.name} = {y.name}, {x.name}"]
        tmp = self.fresh("tmp")
        return [f"{self.ind(lvl)}{tmp} = {x.name}", f"{self.ind(lvl)}{x.name} = {y.name}",
                f"{self.ind(lvl)}{y.name} = {tmp}"]


def text_cost(body):
    """Statements the oracle executes per element of ``n`` (loops over ``n`` count n,
    over ``m`` 13, time loops 3)."""
    stack, per_n = [], 0
    for ln in body:
        st = ln.strip()
        if not st or st.startswith("#"):
            continue
        ind = len(ln) - len(ln.lstrip())
        while stack and stack[-1][0] >= ind:
            stack.pop()
        mult, npow = 1, 0
        for _, (p, c) in stack:
            mult, npow = mult * c, npow + p
        per_n += mult * (1 if npow >= 1 else 0) + (mult * 1000 if npow >= 2 else 0)
        if st.startswith("for "):
            if " t in " in st:
                stack.append((ind, (0, 3)))
            elif "(m" in st or "m -" in st or ".shape[0]" in st and "A" in st or "P.shape" in st:
                stack.append((ind, (0, 13)))
            else:
                stack.append((ind, (1, 1)))
    return max(per_n, 1)
