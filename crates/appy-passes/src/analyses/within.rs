//! Which loops a transform addresses: a loop name that may be a glob (`j*` is `j`,
//! `j_1`, ...: the loops of source variable `j`), and Loopy's `within=` match expression
//! over the loop.
//!
//! A `within` expression combines atoms with `and`, `or`, `not` and parentheses:
//!
//! | atom | a loop matches when |
//! |---|---|
//! | `iname:P` | a loop around it has a name matching `P` |
//! | `writes:A` | its body writes the array named `A` (a parameter's or an allocation's source name) |
//! | `reads:A` | its body reads the array named `A` |
//! | `func:F` | it is in function `F` |
//! | `line:N` | it starts on source line `N` |
//! | `*` | always |
//!
//! Patterns are globs (`*` any text, `?` one character). Loopy's `id:` and `tag:` select
//! statements, which exist from the kernel level on; the transforms run on loops before
//! it, so they are refused with that reason.

use appy_ir::attrs::parse_str;
use appy_ir::diag::Location;
use appy_ir::effects::{Access, effects};
use appy_ir::ir::{Op, Value};
use appy_ir::schedule::{LoopKind, parse_str_array};
use std::collections::{HashMap, HashSet};

/// What an atom tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Iname,
    Writes,
    Reads,
    Func,
    Line,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    All,
    Atom(Key, String),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

/// A parsed `within` expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Within {
    text: String,
    expr: Expr,
}

/// What a `within` expression is tested against: one loop and its surroundings.
#[derive(Clone, Debug, Default)]
pub struct LoopFacts {
    /// The function's name.
    pub func: String,
    /// The names of the loops around it, outermost first.
    pub enclosing: Vec<String>,
    /// Its source line.
    pub line: Option<usize>,
    /// The source names of the arrays its body reads.
    pub reads: HashSet<String>,
    /// The source names of the arrays its body writes.
    pub writes: HashSet<String>,
}

impl Within {
    /// Parses an expression; the error says what was expected.
    pub fn parse(text: &str) -> Result<Within, String> {
        let toks = tokens(text);
        if toks.is_empty() {
            return Err("expects a match expression such as `writes:b and not iname:k`".into());
        }
        let mut p = Parser { toks: &toks, at: 0 };
        let expr = p.or()?;
        if p.at != toks.len() {
            return Err(format!("unexpected `{}` in `{text}`", toks[p.at]));
        }
        Ok(Within {
            text: text.to_string(),
            expr,
        })
    }

    /// The expression as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the loop described by `f` matches.
    pub fn matches(&self, f: &LoopFacts) -> bool {
        eval(&self.expr, f)
    }
}

fn eval(e: &Expr, f: &LoopFacts) -> bool {
    match e {
        Expr::All => true,
        Expr::Not(x) => !eval(x, f),
        Expr::And(a, b) => eval(a, f) && eval(b, f),
        Expr::Or(a, b) => eval(a, f) || eval(b, f),
        Expr::Atom(k, p) => match k {
            Key::Iname => f.enclosing.iter().any(|n| glob(p, n)),
            Key::Writes => f.writes.iter().any(|n| glob(p, n)),
            Key::Reads => f.reads.iter().any(|n| glob(p, n)),
            Key::Func => glob(p, &f.func),
            Key::Line => f.line.is_some_and(|l| glob(p, &l.to_string())),
        },
    }
}

/// Splits at spaces and around parentheses.
fn tokens(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_whitespace() || c == '(' || c == ')' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if c != ' ' && !c.is_whitespace() {
                out.push(c.to_string());
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct Parser<'a> {
    toks: &'a [String],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.at).map(String::as_str)
    }
    fn or(&mut self) -> Result<Expr, String> {
        let mut e = self.and()?;
        while self.peek() == Some("or") {
            self.at += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }
    fn and(&mut self) -> Result<Expr, String> {
        let mut e = self.not()?;
        while self.peek() == Some("and") {
            self.at += 1;
            e = Expr::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }
    fn not(&mut self) -> Result<Expr, String> {
        if self.peek() == Some("not") {
            self.at += 1;
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.atom()
    }
    fn atom(&mut self) -> Result<Expr, String> {
        let Some(t) = self.peek().map(str::to_string) else {
            return Err("the expression ends early".into());
        };
        self.at += 1;
        if t == "(" {
            let e = self.or()?;
            if self.peek() != Some(")") {
                return Err("a `(` is not closed".into());
            }
            self.at += 1;
            return Ok(e);
        }
        if t == "*" {
            return Ok(Expr::All);
        }
        let Some((key, pat)) = t.split_once(':') else {
            return Err(format!("expects `key:pattern` (iname, writes, reads, func, line), got `{t}`"));
        };
        let key = match key {
            "iname" => Key::Iname,
            "writes" => Key::Writes,
            "reads" => Key::Reads,
            "func" => Key::Func,
            "line" => Key::Line,
            "id" | "tag" => {
                return Err(format!(
                    "`{key}:` selects statements, which exist from the kernel level on; loop transforms take iname, writes, reads, func or line"
                ));
            }
            _ => return Err(format!("unknown key `{key}:` (iname, writes, reads, func, line)")),
        };
        if pat.is_empty() {
            return Err(format!("`{key:?}:` needs a pattern").to_lowercase());
        }
        Ok(Expr::Atom(key, pat.to_string()))
    }
}

/// Glob matching: `*` any text, `?` one character.
pub fn glob(pat: &str, s: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    // Iterative matching with backtracking to the last `*`.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// The source names of a function's arrays: its parameters (`appy.arg_names`), the
/// allocations the frontend named (`appy.name`), and the views and casts of either.
pub fn array_names(func: &Op, ops: &[Op]) -> HashMap<Value, String> {
    let mut names = HashMap::new();
    if let (Some(args), Some(blk)) = (func.attr("appy.arg_names"), func.regions.first().and_then(|r| r.blocks.first())) {
        for (v, n) in blk.args.iter().zip(parse_str_array(args)) {
            names.insert(*v, n);
        }
    }
    for op in ops {
        op.walk(&mut |o| {
            if let Some(n) = o.attr("appy.name")
                && let Some(r) = o.results.first()
            {
                names.insert(*r, parse_str(n).to_string());
            } else if appy_ir::effects::is_view(o)
                && let (Some(src), Some(r)) = (o.operands.first(), o.results.first())
                && let Some(n) = names.get(src).cloned()
            {
                names.insert(*r, n);
            }
        });
    }
    names
}

/// The facts of `lp` (a loop) in function `func` under the loops named `enclosing`.
pub fn loop_facts(lp: &Op, func: &str, enclosing: &[String], names: &HashMap<Value, String>) -> LoopFacts {
    let mut f = LoopFacts {
        func: func.to_string(),
        enclosing: enclosing.to_vec(),
        line: lp.loc.as_deref().and_then(Location::parse).map(|l| l.line),
        ..Default::default()
    };
    lp.walk(&mut |o| {
        let e = effects(o);
        for (access, set) in [(e.reads, &mut f.reads), (e.writes, &mut f.writes)] {
            if let Access::Operands(ix) = access {
                for i in ix {
                    if let Some(n) = o.operands.get(*i).and_then(|v| names.get(v)) {
                        set.insert(n.clone());
                    }
                }
            }
        }
    });
    f
}

/// Whether `op` is a loop the transforms address by name.
pub fn is_named_loop(op: &Op) -> bool {
    LoopKind::of(op).is_some() && !op.inames().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> LoopFacts {
        LoopFacts {
            func: "f".into(),
            enclosing: vec!["i".into()],
            line: Some(12),
            reads: ["a".to_string()].into(),
            writes: ["b".to_string()].into(),
        }
    }

    #[test]
    fn expressions() {
        let f = facts();
        let m = |t: &str| Within::parse(t).unwrap().matches(&f);
        assert!(m("writes:b"));
        assert!(!m("writes:a"));
        assert!(m("reads:a and iname:i"));
        assert!(m("not iname:k"));
        assert!(m("(writes:x or reads:a) and func:f"));
        assert!(m("line:12 and *"));
        assert!(m("iname:i*"));
        assert!(!m("not (writes:b)"));
    }

    #[test]
    fn errors_say_what_is_expected() {
        let e = |t: &str| Within::parse(t).unwrap_err();
        assert!(e("").contains("expects a match expression"));
        assert!(e("writes:b and").contains("ends early"));
        assert!(e("(writes:b").contains("not closed"));
        assert!(e("id:s1").contains("kernel level"));
        assert!(e("size:3").contains("unknown key"));
        assert!(e("writes:b iname:i").contains("unexpected `iname:i`"));
    }

    #[test]
    fn globs() {
        assert!(glob("j*", "j"));
        assert!(glob("j*", "j_1"));
        assert!(!glob("j*", "k"));
        assert!(glob("?_1", "j_1"));
        assert!(glob("*", ""));
        assert!(!glob("a", "ab"));
        assert!(glob("a*b*c", "aXbYbc"));
    }
}
