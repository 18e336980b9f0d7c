//! Loop domains as isl sets: each bound of a kernel's loop as a quasi-affine expression
//! over named domain parameters and the inames of enclosing loops.
//!
//! A bound is followed through integer constants, casts, `addi`, `subi`, `muli` by a
//! constant, `ceildivsi` and `floordivsi` by a positive constant (isl's
//! `floor(e/c)`), to the function's parameters (their source names,
//! `appy_ir::kernel::ARG_NAMES`), the extents of parameter arrays (`a_dim0`) and the
//! inames. Any other value is a parameter of its own: `_appy_p<k>` when computed before
//! the kernel, `_appy_v<k>` when computed inside it (a bound read from memory: Loopy's
//! data-dependent domain, whose parameter a parent domain's statement writes).

use appy_ir::affine::Affine;
use appy_ir::attrs::{Scalar, parse_constant};
use appy_ir::ir::{Op, Value};
use std::collections::{BTreeSet, HashMap, HashSet};

/// An expression over names: inames, parameters and `floor(...)` terms.
pub type Expr = Affine<String>;

/// What names values in a function's kernels.
pub struct Namer<'a> {
    /// Every op of the function, by result.
    pub defs: HashMap<Value, &'a Op>,
    /// The function's parameters.
    pub args: HashMap<Value, String>,
    /// The inames of the loops seen so far (induction variable → name).
    pub ivs: HashMap<Value, String>,
    /// The values defined inside the current kernel.
    pub inside: HashSet<Value>,
    /// Names given to values that are not affine.
    fresh: HashMap<Value, String>,
    /// The parameters the expressions rendered so far use.
    pub params: BTreeSet<String>,
}

impl<'a> Namer<'a> {
    /// A namer for the function `f` (its ops) with parameter names `names`.
    pub fn new(f: &'a Op, names: &[String]) -> Self {
        let mut defs = HashMap::new();
        f.walk(&mut |o| {
            for r in &o.results {
                defs.insert(*r, o);
            }
        });
        let args = f.regions[0].blocks[0]
            .args
            .iter()
            .enumerate()
            .map(|(k, v)| (*v, names.get(k).cloned().unwrap_or_else(|| format!("arg{k}"))))
            .collect();
        Namer {
            defs,
            args,
            ivs: HashMap::new(),
            inside: HashSet::new(),
            fresh: HashMap::new(),
            params: BTreeSet::new(),
        }
    }

    fn param(&mut self, name: String) -> Expr {
        self.params.insert(name.clone());
        Expr::var(name)
    }

    fn opaque(&mut self, v: Value) -> Expr {
        if let Some(n) = self.fresh.get(&v) {
            let n = n.clone();
            return self.param(n);
        }
        let k = self.fresh.len();
        let n = if self.inside.contains(&v) {
            format!("_appy_v{k}")
        } else {
            format!("_appy_p{k}")
        };
        self.fresh.insert(v, n.clone());
        self.param(n)
    }

    fn constant(&self, v: Value) -> Option<i64> {
        let op = self.defs.get(&v)?;
        match op.name.as_str() {
            "arith.constant" => match parse_constant(op.attr("value")?, "") {
                Some(Scalar::Int(c)) => Some(c),
                _ => None,
            },
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" => self.constant(op.operands[0]),
            _ => None,
        }
    }

    /// The expression of `v`.
    pub fn expr(&mut self, v: Value) -> Expr {
        self.expr_at(v, 0)
    }

    fn expr_at(&mut self, v: Value, depth: usize) -> Expr {
        if let Some(n) = self.ivs.get(&v) {
            return Expr::var(n.clone());
        }
        if let Some(n) = self.args.get(&v) {
            let n = n.clone();
            return self.param(n);
        }
        if depth > 24 {
            return self.opaque(v);
        }
        let Some(op) = self.defs.get(&v).copied() else {
            return self.opaque(v);
        };
        let x = |s: &mut Self, k: usize| s.expr_at(op.operands[k], depth + 1);
        let out = match op.name.as_str() {
            "arith.constant" => self.constant(v).map(Expr::constant),
            "arith.index_cast" | "arith.index_castui" | "arith.extsi" => Some(x(self, 0)),
            "arith.addi" => {
                let (a, b) = (x(self, 0), x(self, 1));
                a.checked_add(&b)
            }
            "arith.subi" => {
                let (a, b) = (x(self, 0), x(self, 1));
                a.checked_sub(&b)
            }
            "arith.muli" => {
                let (a, b) = (x(self, 0), x(self, 1));
                a.checked_mul(b)
            }
            "arith.ceildivsi" | "arith.floordivsi" => match x(self, 1).as_const().filter(|c| *c > 0) {
                Some(c) => {
                    let mut num = x(self, 0);
                    if op.name == "arith.ceildivsi" {
                        num = match num.checked_add(&Expr::constant(c - 1)) {
                            Some(n) => n,
                            None => return self.opaque(v),
                        };
                    }
                    match num.as_const() {
                        Some(n) => Some(Expr::constant(n.div_euclid(c))),
                        None => Some(Expr::var(format!("floor(({})/{c})", render(&num)))),
                    }
                }
                None => None,
            },
            "memref.dim" => match (self.args.get(&op.operands[0]).cloned(), self.constant(op.operands[1])) {
                (Some(a), Some(k)) => Some(self.param(format!("{a}_dim{k}"))),
                _ => None,
            },
            _ => None,
        };
        out.unwrap_or_else(|| self.opaque(v))
    }
}

/// `e` in isl's syntax: `1024*i_outer + n - 3`, `0`.
pub fn render(e: &Expr) -> String {
    let mut s = String::new();
    for (k, c) in &e.terms {
        let term = match c.unsigned_abs() {
            1 => k.clone(),
            a => format!("{a}*{k}"),
        };
        if s.is_empty() {
            s = if *c < 0 { format!("-{term}") } else { term };
        } else {
            s.push_str(if *c < 0 { " - " } else { " + " });
            s.push_str(&term);
        }
    }
    if s.is_empty() {
        return e.c.to_string();
    }
    if e.c != 0 {
        s.push_str(if e.c < 0 { " - " } else { " + " });
        s.push_str(&e.c.unsigned_abs().to_string());
    }
    s
}

/// The parameters a rendered constraint names: the identifiers of `text` that are not
/// inames, `floor`, `mod` or `and`.
pub fn names_in(text: &str, inames: &HashSet<String>) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
        .filter(|w| !matches!(*w, "floor" | "mod" | "and") && !inames.contains(*w))
        .map(str::to_string)
        .collect()
}

/// The domain of a loop over `inames` with bounds `(lb, ub, step)` per dimension, in
/// isl's syntax, with its parameters in the header: `[n] -> { [i] : 0 <= i < n }`.
pub fn domain(inames: &[String], bounds: &[(Expr, Expr, Expr)], all_inames: &HashSet<String>) -> String {
    let mut cons = vec![];
    for (name, (lb, ub, st)) in inames.iter().zip(bounds) {
        cons.push(format!("{} <= {name} < {}", render(lb), render(ub)));
        if st.as_const() != Some(1) {
            let off = match Expr::var(name.clone()).checked_sub(lb) {
                Some(e) if e.terms.len() == 1 && e.c == 0 && e.terms.values().all(|c| *c == 1) => render(&e),
                Some(e) => format!("({})", render(&e)),
                None => name.clone(),
            };
            cons.push(format!("{off} mod {} = 0", render(st)));
        }
    }
    let body = cons.join(" and ");
    let params: Vec<String> = names_in(&body, all_inames).into_iter().collect();
    let head = if params.is_empty() {
        String::new()
    } else {
        format!("[{}] -> ", params.join(", "))
    };
    format!("{head}{{ [{}] : {body} }}", inames.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering() {
        let e = Expr::var("n".to_string()).checked_sub(&Expr::constant(3)).unwrap();
        assert_eq!(render(&e), "n - 3");
        let e = Expr::var("i".to_string()).scale(-1024).unwrap();
        assert_eq!(render(&e), "-1024*i");
        assert_eq!(render(&Expr::constant(0)), "0");
        let inames: HashSet<String> = ["i".to_string()].into();
        let d = domain(
            &["i".to_string()],
            &[(
                Expr::constant(1),
                Expr::var("floor((n + 1021)/1024)".to_string()),
                Expr::constant(2),
            )],
            &inames,
        );
        assert_eq!(d, "[n] -> { [i] : 1 <= i < floor((n + 1021)/1024) and (i - 1) mod 2 = 0 }");
        let d = domain(
            &["i".to_string()],
            &[(Expr::constant(0), Expr::var("n".to_string()), Expr::constant(4))],
            &inames,
        );
        assert_eq!(d, "[n] -> { [i] : 0 <= i < n and i mod 4 = 0 }");
    }
}
