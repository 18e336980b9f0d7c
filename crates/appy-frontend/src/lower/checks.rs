//! Runtime checks that report through the status buffer ([`appy_ir::status`]):
//! bounds checks of array subscripts in checked mode, and integer `//` and `%` whose
//! divisor may be zero (always: the result is 0 and the runtime warns, as NumPy does).
//!
//! The status buffer is a trailing function parameter, added only to functions that
//! use it, so unchecked code without such divisions costs nothing.

use super::Lower;
use appy_ir::build::{Builder, IPred};
use appy_ir::diag::Span;
use appy_ir::ir::{Op, Region, Value};
use appy_ir::status::{Site, SiteKind};
use appy_ir::types::STy;

/// `memref.atomic_rmw` kind `maxs` (MLIR's `AtomicRMWKind`).
const ATOMIC_MAXS: i64 = 6;

impl Lower<'_> {
    /// The status buffer parameter (created on first use).
    pub(super) fn status_buf(&mut self) -> Value {
        if let Some(v) = self.status {
            return v;
        }
        let v = self.b.m.value("memref<?xi64>");
        self.status = Some(v);
        v
    }

    /// Registers a site at `span`; returns its id (1-based).
    pub(super) fn new_site(&mut self, span: Span, kind: SiteKind) -> i64 {
        let (l, c) = self.file.line_col(span.start);
        self.sites.push(Site {
            loc: format!("{}:{l}:{c}", self.file.name()),
            kind,
        });
        self.sites.len() as i64
    }

    /// A bounds-check site for the subscript at `span` (checked mode), else `None`.
    pub(super) fn index_site(&mut self, span: Span) -> Option<i64> {
        self.checked.then(|| self.new_site(span, SiteKind::Index))
    }

    /// Checked mode: index `v` (i64, as written) of axis `axis` whose size is `dim`
    /// (i64). A negative index counts from the end, as in Python; an index still out of
    /// range records the site, the index and the size. Returns the index to use
    /// (i64; 0 when out of range) and whether it is in range (i1).
    pub(super) fn check_index(&mut self, v: Value, dim: Value, axis: usize, site: i64) -> (Value, Value) {
        let zero = self.b.int(0, "i64");
        let neg = self.b.cmpi(IPred::Slt, v, zero);
        let wrapped = self.b.bin("arith.addi", v, dim);
        let w = self.b.select(neg, wrapped, v);
        let ok = self.b.cmpi(IPred::Ult, w, dim);
        let bad = self.not(ok);
        self.record_fault(bad, site, v, dim, axis);
        let z = self.b.int(0, "i64");
        (self.b.select(ok, w, z), ok)
    }

    /// When `cond`: records an error at `site` with a value, a size and an axis (the
    /// first error of a call wins: an atomic max marks the buffer).
    pub(super) fn record_fault(&mut self, cond: Value, site: i64, value: Value, size: Value, axis: usize) {
        let status = self.status_buf();
        self.b.begin();
        let c0 = self.b.index(0);
        let one = self.b.int(1, "i64");
        let old = self.b.op1(
            "memref.atomic_rmw",
            &[one, status, c0],
            "i64",
            &[("kind", format!("{ATOMIC_MAXS} : i64"))],
        );
        let z = self.b.int(0, "i64");
        let first = self.b.cmpi(IPred::Eq, old, z);
        self.b.begin();
        let s = self.b.int(site, "i64");
        let ax = self.b.int(axis as i64, "i64");
        for (k, x) in [(1, s), (2, value), (3, size), (4, ax)] {
            let ck = self.b.index(k);
            self.b.store(x, status, &[ck]);
        }
        self.b.push(Builder::yield_op(&[]));
        let record = self.b.end();
        self.b.if_op(first, record, None);
        self.b.push(Builder::yield_op(&[]));
        let then = self.b.end();
        self.b.if_op(cond, then, None);
    }

    /// A dimension `x` (i64) of a new array at `span`: a negative one is an error, as
    /// in NumPy (the array is then allocated empty). Constant sizes are checked at
    /// compile time.
    pub(super) fn nonnegative_dim(&mut self, x: Value, axis: usize, span: Span) -> Value {
        if self.b.const_int_of(x).is_some_and(|c| c >= 0) {
            return x;
        }
        let zero = self.b.int(0, "i64");
        let neg = self.b.cmpi(IPred::Slt, x, zero);
        let site = self.new_site(span, SiteKind::Alloc);
        self.record_fault(neg, site, x, zero, axis);
        self.b.select(neg, zero, x)
    }

    /// `!x` for an i1.
    fn not(&mut self, x: Value) -> Value {
        let t = self.b.int(1, "i1");
        self.b.bin("arith.xori", x, t)
    }

    /// A load of `m[idx]` that happens only when `ok` (else 0).
    pub(super) fn guarded_load(&mut self, ok: Option<Value>, m: Value, idx: &[Value]) -> Value {
        let Some(ok) = ok else { return self.b.load(m, idx) };
        self.b.begin();
        let x = self.b.load(m, idx);
        self.b.push(Builder::yield_op(&[x]));
        let then = self.b.end();
        let ty = self.b.m.ty(x).to_string();
        self.b.begin();
        let z = if appy_ir::types::is_float_type(&ty) {
            self.b.float(0.0, &ty)
        } else {
            self.b.int(0, &ty)
        };
        self.b.push(Builder::yield_op(&[z]));
        let orelse = self.b.end();
        let r = self.b.m.value(ty);
        self.b.push(
            Op::new("scf.if")
                .with_operands([ok])
                .with_results([r])
                .with_region(Builder::region(vec![], then))
                .with_region(Region::single(appy_ir::ir::Block { args: vec![], ops: orelse })),
        );
        r
    }

    /// Emits `ops` (built by `f`) only when `ok`.
    pub(super) fn guarded(&mut self, ok: Option<Value>, f: impl FnOnce(&mut Self)) {
        let Some(ok) = ok else { return f(self) };
        self.b.begin();
        f(self);
        self.b.push(Builder::yield_op(&[]));
        let then = self.b.end();
        self.b.if_op(ok, then, None);
    }

    /// Integer `x // y` or `x % y` (`ty` the MLIR integer type) with NumPy's meaning
    /// where C's is undefined: a zero divisor gives 0, and the minimum integer `// -1`
    /// wraps; both are reported as warnings. `op` computes the result from `x` and a
    /// divisor that is never 0 or (for the minimum integer) -1. In a whole-array
    /// expression (element-wise ops, no regions) nothing is reported.
    pub(super) fn guarded_int_div(
        &mut self,
        x: Value,
        y: Value,
        t: STy,
        span: Span,
        kind: SiteKind,
        op: impl FnOnce(&mut Self, Value, Value) -> Value,
    ) -> Value {
        let ty = t.mlir();
        let cy = self.b.const_int_of(y);
        if cy.is_some_and(|c| c != 0 && (c != -1 || t.dt.is_unsigned())) {
            return op(self, x, y);
        }
        let zero = self.b.int(0, ty);
        let one = self.b.int(1, ty);
        let by0 = self.b.cmpi(IPred::Eq, y, zero);
        // The one signed quotient that overflows: MIN // -1 (none for unsigned).
        let ovf = if t.dt.is_unsigned() {
            self.b.int(0, "i1")
        } else {
            let m1 = self.b.int(-1, ty);
            let min = self.b.int(t.dt.signed_min(), ty);
            let ym1 = self.b.cmpi(IPred::Eq, y, m1);
            let xmin = self.b.cmpi(IPred::Eq, x, min);
            self.b.bin("arith.andi", ym1, xmin)
        };
        let bad = self.b.bin("arith.ori", by0, ovf);
        let safe = self.b.select(bad, one, y);
        // x // 1 = x and x % 1 = 0: the wrapped quotient and NumPy's remainder.
        let r = op(self, x, safe);
        let r = self.b.select(by0, zero, r);
        if self.no_status_reports {
            // In a whole-array expression the result is NumPy's, without the warning.
            return r;
        }
        let status = self.status_buf();
        let site = self.new_site(span, kind);
        let report = |me: &mut Self, cond: Value, slot: i64| {
            me.b.begin();
            let s = me.b.int(site, "i64");
            let c = me.b.index(slot);
            me.b.store(s, status, &[c]);
            me.b.push(Builder::yield_op(&[]));
            let then = me.b.end();
            me.b.if_op(cond, then, None);
        };
        report(self, by0, 5);
        if kind == SiteKind::FloorDiv {
            report(self, ovf, 6);
        }
        r
    }
}
