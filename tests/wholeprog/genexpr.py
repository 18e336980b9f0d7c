"""Expressions for the whole-program generator (`gen.py`).

An expression is generated together with what the generator must know to keep the
program valid and free of undefined behaviour, as an `Ex`:

* ``t``: its type class: ``'pi'`` a Python int (weakly typed under NEP 50: literals,
  ``k``, loop variables, ``n``), ``'ni'`` a NumPy integer (array elements: int32 or
  int64 depending on the call's signature), ``'f'`` a float (Python float, float32 or
  float64).
* ``b``: a bound on its magnitude (interval arithmetic on absolute values), so that no
  integer operation can overflow int32 (the narrowest integer dtype a signature may
  give), and no float operation can overflow float32.
* ``nan``: whether it may be NaN or infinite (from ``np.log``/``np.sqrt`` of possibly
  negative values): such values are never converted to int, used as divisors, shift
  amounts, loop bounds or in order-dependent builtin ``max``/``min`` reductions.

Divisors are nonzero by construction (nonzero literals, ``abs(e) + 1``, ...); negative
integer exponents only apply to nonzero Python-int bases (whose result is a float, as in
Python); shift amounts are in 0..62 and ``<<`` never overflows.
"""
import re
from dataclasses import dataclass

INT_LIMIT = 2 ** 30      # every integer subexpression stays below this (int32-safe)
FLOAT_LIMIT = 1e30       # every float subexpression stays below this (float32-safe)


@dataclass
class Ex:
    s: str
    t: str          # 'pi' | 'ni' | 'f'
    b: float        # magnitude bound
    nan: bool = False

    @property
    def is_int(self):
        return self.t in ("pi", "ni")


def join(t1, t2):
    """The type class of a binary arithmetic result (before `/`)."""
    if "f" in (t1, t2):
        return "f"
    if "ni" in (t1, t2):
        return "ni"
    return "pi"


def ok(e):
    """Whether an expression stays inside the limits."""
    lim = INT_LIMIT if e.is_int else FLOAT_LIMIT
    return e.b <= lim


class ExprGen:
    """Random expressions over a context. ``ctx`` provides ``leaves(want)``: a list of
    `Ex` leaves (array elements at valid indices, scalars, loop variables)."""

    def __init__(self, rng, exclude=frozenset(), inexact_names=None):
        self.r = rng
        self.exclude = exclude
        self.inexact_names = set() if inexact_names is None else inexact_names

    _MATH = re.compile(r"np\.(exp|log|tanh|sin|cos|power)\(|\*\* (?![0-3]\))")
    _NAME = re.compile(r"[A-Za-z_]\w*")

    def inexact(self, e):
        """Whether ``e`` may differ from NumPy's value by rounding (a math function within
        its ulps, a float reduction summed in another order, or a variable or array
        holding such a value). Discontinuous operations (comparisons, floor, ceil,
        int(), float // and %) are never applied to those: a one-ulp difference would
        become a different branch or integer."""
        s = e.s if isinstance(e, Ex) else e
        if self._MATH.search(s):
            return True
        return any(t in self.inexact_names for t in self._NAME.findall(s))

    # -- leaves ---------------------------------------------------------------------
    def int_lit(self, allow_zero=True):
        v = self.r.choice([0, 1, 2, 3, 5, 7, -1, -2, -3, -5, -7, 11, -13, 64, -100])
        if v == 0 and not allow_zero:
            v = -3
        return Ex(str(v) if v >= 0 else f"({v})", "pi", abs(v))

    def float_lit(self):
        v = self.r.choice(["0.5", "1.5", "-0.25", "2.0", "-1.75", "0.1", "3.0", "-0.5", "1e-3", "0.0"])
        return Ex(v if not v.startswith("-") else f"({v})", "f", abs(float(v)))

    def leaf(self, ctx, want=None):
        """A leaf of class ``want`` ('int', 'float' or None for any)."""
        cands = [e for e in ctx.leaves() if want is None
                 or (want == "int" and e.is_int) or (want == "float" and not e.is_int)]
        if cands and self.r.random() < 0.8:
            return self.r.choice(cands)
        if want == "int" or (want is None and self.r.random() < 0.4):
            return self.int_lit()
        return self.float_lit()

    # -- composite --------------------------------------------------------------------
    def expr(self, ctx, want=None, depth=2):
        """An expression of class ``want`` ('int', 'float', None), within the limits."""
        for _ in range(8):
            e = self._expr(ctx, want, depth)
            if ok(e) and (want != "int" or e.is_int) and (want != "float" or not e.is_int):
                return e
        return self.leaf(ctx, want)

    def _expr(self, ctx, want, depth):
        if depth <= 0 or self.r.random() < 0.25:
            return self.leaf(ctx, want)
        if want == "int":
            return self.int_expr(ctx, depth)
        if want == "float":
            return self.float_expr(ctx, depth)
        return self.int_expr(ctx, depth) if self.r.random() < 0.4 else self.float_expr(ctx, depth)

    def nonzero_int(self, ctx, depth):
        """An integer divisor that is never zero (negative ones too)."""
        c = self.r.random()
        if c < 0.5:
            return self.int_lit(allow_zero=False)
        e = self.expr(ctx, "int", depth - 1)
        if e.b > 2 ** 20:
            return self.int_lit(allow_zero=False)
        if c < 0.75:
            return Ex(f"(abs({e.s}) + 1)", e.t, e.b + 1)
        if c < 0.9:
            return Ex(f"(-(abs({e.s}) + 2))", e.t, e.b + 2)
        return Ex(f"({e.s} * {e.s} + 1)", e.t, e.b * e.b + 1)

    def nonzero_float(self, ctx, depth):
        """A float divisor whose magnitude is at least 0.5."""
        c = self.r.random()
        if c < 0.3:
            v = self.r.choice(["0.5", "-0.75", "1.5", "-2.0", "3.0", "0.7"])
            return Ex(v if not v.startswith("-") else f"({v})", "f", abs(float(v)))
        e = self.expr(ctx, None, depth - 1)
        if e.nan or e.b > 1e6:
            return Ex("2.0", "f", 2.0)
        if c < 0.6:
            return Ex(f"(abs({e.s}) + 0.5)", join(e.t, "f"), e.b + 0.5)
        if c < 0.8:
            return Ex(f"(1.0 + {e.s} * {e.s})", join(e.t, "f"), 1 + e.b * e.b)
        return Ex(f"(-(abs({e.s}) + 1.0))", join(e.t, "f"), e.b + 1)

    def int_expr(self, ctx, depth):
        r = self.r
        a = self.expr(ctx, "int", depth - 1)
        op = r.choice(["+", "-", "*", "//", "%", ">>", "<<", "&", "|", "^", "**", "neg", "abs",
                       "minmax", "cond", "+", "-", "*", "int", "**"])
        if op in ("+", "-"):
            b = self.expr(ctx, "int", depth - 1)
            return Ex(f"({a.s} {op} {b.s})", join(a.t, b.t), a.b + b.b)
        if op == "*":
            b = self.expr(ctx, "int", depth - 1)
            return Ex(f"({a.s} * {b.s})", join(a.t, b.t), a.b * b.b)
        if op in ("//", "%"):
            d = self.nonzero_int(ctx, depth)
            bound = a.b if op == "//" else d.b
            return Ex(f"({a.s} {op} {d.s})", join(a.t, d.t), bound)
        if op == ">>":
            if r.random() < 0.5:
                sh = Ex(str(r.randint(0, 62)), "pi", 62)
            else:
                v = self.expr(ctx, "int", 0)
                if r.random() < 0.5:
                    m = r.choice([3, 7, 31])
                    sh = Ex(f"({v.s} & {m})", v.t, m)
                else:
                    sh = Ex(f"({v.s} % 63)", v.t, 62)
            return Ex(f"({a.s} >> {sh.s})", join(a.t, sh.t), a.b)
        if op == "int":
            f = self.expr(ctx, "float", depth - 1)
            if f.nan or self.inexact(f):
                return a
            return Ex(f"int({f.s})", "pi", f.b + 1)
        if op == "<<":
            room = max(0, 29 - int(a.b).bit_length())
            sh = r.randint(0, min(room, 20))
            return Ex(f"({a.s} << {sh})", a.t, a.b * 2 ** sh)
        if op in ("&", "|", "^"):
            b = self.expr(ctx, "int", depth - 1)
            bound = 2 ** max(int(a.b).bit_length(), int(b.b).bit_length())
            if op == "&" and r.random() < 0.5:
                m = r.choice([1, 3, 7, 255, -8, -256])
                return Ex(f"({a.s} & {m if m >= 0 else f'({m})'})", a.t, max(a.b, abs(m)))
            return Ex(f"({a.s} {op} {b.s})", join(a.t, b.t), bound)
        if op == "**":
            if r.random() < 0.5 and "intpow" not in self.exclude:
                # Python int ** (maybe negative) int: a float when the exponent is negative.
                base = r.choice([2, 3, -2, -3, 5, 10])
                bs = str(base) if base > 0 else f"({base})"
                k = ctx.int_param()
                if k is not None and r.random() < 0.6:
                    return Ex(f"({bs} ** {k.s})", "f", float(abs(base)) ** k.b)
                e = r.choice([-3, -2, -1, 0, 1, 2, 3])
                es = str(e) if e >= 0 else f"({e})"
                return Ex(f"({bs} ** {es})", "f" if e < 0 else "pi", float(abs(base)) ** abs(e))
            e = r.randint(0, 3)
            return Ex(f"({a.s} ** {e})", a.t, a.b ** e if e else 1)
        if op == "neg":
            return Ex(f"(-{a.s})", a.t, a.b)
        if op == "abs":
            return Ex(f"abs({a.s})", a.t, a.b)
        if op == "minmax":
            b = self.expr(ctx, "int", depth - 1)
            f = r.choice(["max", "min", "np.maximum", "np.minimum"])
            return Ex(f"{f}({a.s}, {b.s})", join(a.t, b.t), max(a.b, b.b))
        # conditional expression
        b = self.expr(ctx, "int", depth - 1)
        c = self.cond(ctx, depth - 1)
        return Ex(f"({a.s} if {c} else {b.s})", join(a.t, b.t), max(a.b, b.b))

    def float_expr(self, ctx, depth):
        r = self.r
        op = r.choice(["+", "-", "*", "/", "idiv", "//", "%", "math", "math", "**", "mixed",
                       "cond", "minmax", "neg", "cast", "+", "*"])
        if op in ("+", "-", "*"):
            a = self.expr(ctx, None, depth - 1)
            b = self.expr(ctx, "float" if not a.t == "f" and r.random() < 0.7 else None, depth - 1)
            bound = a.b + b.b if op != "*" else a.b * b.b
            return Ex(f"({a.s} {op} {b.s})", join(a.t, b.t), bound, a.nan or b.nan)
        if op == "/":
            a = self.expr(ctx, None, depth - 1)
            d = self.nonzero_float(ctx, depth)
            return Ex(f"({a.s} / {d.s})", "f", a.b * 2, a.nan)
        if op == "idiv":
            # int / int: true division, a float64.
            a = self.expr(ctx, "int", depth - 1)
            d = self.nonzero_int(ctx, depth)
            return Ex(f"({a.s} / {d.s})", "f", a.b)
        if op in ("//", "%"):
            a = self.expr(ctx, "float", depth - 1)
            if self.inexact(a):
                return Ex(f"({a.s} * 0.5)", "f", a.b, a.nan)
            d = self.r.choice(["0.75", "(-1.5)", "2.0", "(-0.5)", "3.0"])
            bound = a.b * 2 + 1 if op == "//" else 3.0
            return Ex(f"({a.s} {op} {d})", "f", bound, a.nan)
        if op == "math":
            a = self.expr(ctx, None, depth - 1)
            f = r.choice(["np.exp", "np.sqrt", "np.log", "np.tanh", "np.sin", "np.cos", "np.abs",
                          "np.floor", "np.ceil", "abs", "np.sqrt", "np.log"])
            if f == "np.exp":
                if a.b > 30:
                    return Ex(f"np.tanh({a.s})", join(a.t, "f"), 1.0, a.nan)
                import math
                return Ex(f"np.exp({a.s})", join(a.t, "f"), math.exp(a.b), a.nan)
            if f in ("np.sqrt", "np.log"):
                if r.random() < 0.7:   # safe argument
                    inner = f"(abs({a.s}) + 0.5)" if f == "np.log" else f"abs({a.s})"
                    return Ex(f"{f}({inner})", join(a.t, "f"), a.b + 1, a.nan)
                return Ex(f"{f}({a.s})", join(a.t, "f"), a.b + 1, True)   # NaN for negatives
            if f in ("np.tanh", "np.sin", "np.cos"):
                return Ex(f"{f}({a.s})", join(a.t, "f"), 1.0, a.nan)
            if f in ("np.floor", "np.ceil") and not self.inexact(a):
                return Ex(f"{f}({a.s})", join(a.t, "f"), a.b + 1, a.nan)
            if f in ("np.floor", "np.ceil"):
                return Ex(f"np.tanh({a.s})", join(a.t, "f"), 1.0, a.nan)
            return Ex(f"{f}({a.s})", a.t, a.b, a.nan)
        if op == "**":
            a = self.expr(ctx, "float", depth - 1)
            c = r.random()
            if c < 0.4:
                return Ex(f"({a.s} ** 2)", "f", a.b * a.b, a.nan)
            if c < 0.7:
                return Ex(f"(abs({a.s}) ** 0.5)", "f", a.b ** 0.5 + 1, a.nan)
            if c < 0.85:
                return Ex(f"((abs({a.s}) + 1.0) ** (-2))", "f", 1.0, a.nan)
            return Ex(f"np.power({a.s}, 3)", "f", a.b ** 3, a.nan)
        if op == "mixed":
            # int and float operands together: promotion, weak Python scalars.
            a = self.expr(ctx, "int", depth - 1)
            b = self.expr(ctx, "float", depth - 1)
            o = r.choice(["+", "-", "*"])
            bound = a.b + b.b if o != "*" else a.b * b.b
            return Ex(f"({a.s} {o} {b.s})", "f", bound, b.nan)
        if op == "cond":
            a = self.expr(ctx, None, depth - 1)
            b = self.expr(ctx, "float", depth - 1)
            c = self.cond(ctx, depth - 1)
            return Ex(f"({a.s} if {c} else {b.s})", join(a.t, b.t), max(a.b, b.b), a.nan or b.nan)
        if op == "minmax":
            a = self.expr(ctx, None, depth - 1)
            b = self.expr(ctx, "float", depth - 1)
            f = r.choice(["np.maximum", "np.minimum", "max", "min"])
            if f in ("max", "min") and a.t != "f":
                # Python's max/min return an operand, an int or a float by the values;
                # appy's result has one type (the join): keep the meaning one type.
                a = Ex(f"float({a.s})", "f", a.b, a.nan)
            return Ex(f"{f}({a.s}, {b.s})", join(a.t, b.t), max(a.b, b.b), a.nan or b.nan)
        if op == "neg":
            a = self.expr(ctx, "float", depth - 1)
            return Ex(f"(-{a.s})", "f", a.b, a.nan)
        a = self.expr(ctx, None, depth - 1)
        f = r.choice(["float", "np.float32", "np.float64"])
        return Ex(f"{f}({a.s})", "f", a.b, a.nan)

    def cond(self, ctx, depth=1):
        """A boolean condition (comparisons, chained, and/or/not) of exact values."""
        for _ in range(6):
            c = self._cond(ctx, depth)
            if not self.inexact(c):
                return c
        v = ctx.loop_var()
        return f"{v} % 2 == 0" if v else "k > 0"

    def _cond(self, ctx, depth):
        r = self.r
        c = r.random()
        if c < 0.15:
            v = ctx.loop_var()
            if v is not None:
                return f"{v} % {r.choice([2, 3, 4])} == {r.choice([0, 1])}"
        if c < 0.25:
            a = self.expr(ctx, None, depth)
            lo, hi = r.choice([("-1.0", "1.0"), ("0", "3"), ("-0.5", "0.5")])
            return f"{lo} < {a.s} <= {hi}"
        a = self.expr(ctx, None, depth)
        b = self.expr(ctx, None, depth) if r.random() < 0.6 else self.leaf(ctx)
        op = r.choice(["<", "<=", ">", ">=", "==", "!="])
        s = f"{a.s} {op} {b.s}"
        c = r.random()
        if c < 0.15 and depth > 0:
            return f"({s}) and ({self.cond(ctx, depth - 1)})"
        if c < 0.3 and depth > 0:
            return f"({s}) or ({self.cond(ctx, depth - 1)})"
        if c < 0.37:
            return f"not ({s})"
        return s
