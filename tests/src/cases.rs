//! Test cases written next to the code they test: a `# test:` comment above a jitted
//! function says how to call it, and the harness runs it on random inputs against
//! CPython + NumPy (`tests/tests/suite/cases.rs` on the CPU, `scripts/gpu_cases.py
//! cases` on the GPU, which parses the same lines with `scripts/cases.py`).
//!
//! ```text
//! # test: a:f64[n] b:f64[n,m]@0..1 s:float k:int=n-1 | n=1,7,255,1000 m=3,13
//! ```
//!
//! Each parameter is `name:type`: an array `f64[n,m]` (dims are size variables or
//! integers; values uniform in `@lo..hi`, default -1..1, ints 0..10, bools random), a
//! CSR row-pointer array `indptr[n]@lo..hi` (0, then increments in `[lo, hi)`), a
//! scalar `float`/`f32`/`f64` (random in the range) or `int=EXPR` / `bool=EXPR`, where
//! `EXPR` is an integer expression over size variables (`n`, `n-1`, `2*n+1`, `3`).
//! After `|`, each size variable lists its values; case k uses the k-th value of each
//! list (a shorter list repeats). Options after the sizes: `ulp=N` compares floats in
//! units in the last place, `rtol=X`, `atol=X` set tolerances, `mvl=N` the vector
//! length.

use crate::Rng;
use appy_ir::types::DType;
use appy_runtime::{HostArray, HostValue};

/// A parameter of a case.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// An array: dtype, dims (size expressions), value range.
    Array(DType, Vec<String>, f64, f64),
    /// A CSR row-pointer array (`indptr[n]@lo..hi`): int64, starting at 0, each entry the
    /// previous plus a random integer in `[lo, hi)`.
    Indptr(String, i64, i64),
    /// A random float scalar of a dtype (Python float when `weak`).
    Float(DType, bool, f64, f64),
    /// An int scalar given by an expression over the sizes.
    Int(String),
    /// A bool scalar given by an expression (non-zero is true).
    Bool(String),
    /// A random NumPy integer scalar of a dtype (`u8`, `i16@-5..5`).
    IntScalar(DType, i64, i64),
}

/// One `# test:` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Parameters, in order.
    pub params: Vec<(String, Param)>,
    /// Size variables and their values.
    pub sizes: Vec<(String, Vec<i64>)>,
    /// Compare floats in ulps (0: use tolerances).
    pub ulp: u64,
    /// Relative and absolute tolerances (None: the dtype's defaults).
    pub tol: Option<(f64, f64)>,
    /// Vector length.
    pub mvl: i64,
    /// `ref=ld`: the expected values are those of the same function computed in long
    /// double precision and rounded (nearly the correctly rounded results, which NumPy's
    /// own float32 functions miss by up to 3 ulp and some float64 ones by 1).
    pub refld: bool,
}

impl Spec {
    /// Parses the text after `# test:`.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let (params, rest) = text.split_once('|').unwrap_or((text, ""));
        let mut spec = Spec {
            params: vec![],
            sizes: vec![],
            ulp: 0,
            tol: None,
            mvl: 256,
            refld: false,
        };
        for p in params.split_whitespace() {
            let (name, ty) = p.split_once(':').ok_or_else(|| format!("`{p}`: expected name:type"))?;
            spec.params.push((name.to_string(), parse_param(ty)?));
        }
        let (mut rtol, mut atol) = (None, None);
        for s in rest.split_whitespace() {
            let (k, v) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected var=values"))?;
            let num = |v: &str| v.parse::<f64>().map_err(|_| format!("`{s}`: not a number"));
            match k {
                "ulp" => spec.ulp = num(v)? as u64,
                "rtol" => rtol = Some(num(v)?),
                "atol" => atol = Some(num(v)?),
                "mvl" => spec.mvl = num(v)? as i64,
                "ref" if v == "ld" => spec.refld = true,
                _ => {
                    let vals = v
                        .split(',')
                        .map(|x| x.parse::<i64>().map_err(|_| format!("`{s}`: sizes are integers")))
                        .collect::<Result<Vec<_>, _>>()?;
                    spec.sizes.push((k.to_string(), vals));
                }
            }
        }
        if rtol.is_some() || atol.is_some() {
            spec.tol = Some((rtol.unwrap_or(0.0), atol.unwrap_or(0.0)));
        }
        Ok(spec)
    }

    /// Number of cases (the longest size list; 1 without sizes).
    pub fn cases(&self) -> usize {
        self.sizes.iter().map(|(_, v)| v.len()).max().unwrap_or(1)
    }

    /// The size variables of case `k`.
    pub fn env(&self, k: usize) -> Vec<(String, i64)> {
        self.sizes.iter().map(|(n, v)| (n.clone(), v[k % v.len()])).collect()
    }

    /// Random arguments for case `k`.
    pub fn args(&self, k: usize, rng: &mut Rng) -> Result<Vec<HostValue>, String> {
        let env = self.env(k);
        let mut out = vec![];
        for (_, p) in &self.params {
            out.push(match p {
                Param::Array(dt, dims, lo, hi) => {
                    let shape = dims
                        .iter()
                        .map(|d| eval(d, &env).map(|v| v.max(0) as usize))
                        .collect::<Result<Vec<_>, _>>()?;
                    if dt.is_complex() {
                        // The parts, each in [lo, hi): a float array of one more axis.
                        let mut v = rng.array(dt.real_part(), &[shape, vec![2]].concat(), *lo, *hi);
                        v.from_abi(*dt);
                        v
                    } else if *dt == DType::Bool {
                        let n: usize = shape.iter().product();
                        let vals: Vec<f64> = (0..n).map(|_| (rng.next_u64() & 1) as f64).collect();
                        HostValue::Array(HostArray::from_f64(DType::Bool, shape, &vals))
                    } else {
                        rng.array(*dt, &shape, *lo, *hi)
                    }
                }
                Param::Indptr(n, lo, hi) => {
                    let n = eval(n, &env)?.max(0) as usize;
                    let mut acc = 0i64;
                    let vals: Vec<f64> = (0..n)
                        .map(|k| {
                            if k > 0 {
                                acc += rng.int(*lo, *hi);
                            }
                            acc as f64
                        })
                        .collect();
                    HostValue::Array(HostArray::from_f64(DType::I64, vec![n], &vals))
                }
                Param::Float(dt, weak, lo, hi) => {
                    let v = rng.uniform(*lo, *hi);
                    let v = if *dt == DType::F32 { v as f32 as f64 } else { v };
                    HostValue::Float(v, *dt, *weak)
                }
                Param::Int(e) => HostValue::Int(eval(e, &env)?, DType::I64, true),
                Param::Bool(e) => HostValue::Bool(eval(e, &env)? != 0),
                Param::IntScalar(dt, lo, hi) => HostValue::Int(rng.int(*lo, *hi), *dt, false),
            });
        }
        Ok(out)
    }
}

fn parse_param(ty: &str) -> Result<Param, String> {
    let (ty, range) = match ty.split_once('@') {
        Some((t, r)) => {
            let (lo, hi) = r.split_once("..").ok_or_else(|| format!("`{r}`: expected lo..hi"))?;
            let p = |x: &str| x.parse::<f64>().map_err(|_| format!("`{x}`: not a number"));
            (t, Some((p(lo)?, p(hi)?)))
        }
        None => (ty, None),
    };
    if let Some(dims) = ty.strip_prefix("indptr[") {
        let (lo, hi) = range.unwrap_or((0.0, 5.0));
        return Ok(Param::Indptr(dims.trim_end_matches(']').to_string(), lo as i64, hi as i64));
    }
    if let Some((base, dims)) = ty.split_once('[') {
        let dt = dtype(base)?;
        let dims: Vec<String> = dims.trim_end_matches(']').split(',').map(|d| d.trim().to_string()).collect();
        let (lo, hi) = range.unwrap_or(if dt.is_float() || dt.is_complex() {
            (-1.0, 1.0)
        } else {
            (0.0, 10.0)
        });
        return Ok(Param::Array(dt, dims, lo, hi));
    }
    if let Some(e) = ty.strip_prefix("int=") {
        return Ok(Param::Int(e.to_string()));
    }
    if let Some(e) = ty.strip_prefix("bool=") {
        return Ok(Param::Bool(e.to_string()));
    }
    if let Some(dt) = dtype(ty).ok().filter(|d| d.is_int()) {
        let (lo, hi) = range.unwrap_or((0.0, 10.0));
        return Ok(Param::IntScalar(dt, lo as i64, hi as i64));
    }
    let (lo, hi) = range.unwrap_or((-1.0, 1.0));
    match ty {
        "float" => Ok(Param::Float(DType::F64, true, lo, hi)),
        "f32" | "float32" => Ok(Param::Float(DType::F32, false, lo, hi)),
        "f64" | "float64" => Ok(Param::Float(DType::F64, false, lo, hi)),
        _ => Err(format!("unknown parameter type `{ty}`")),
    }
}

fn dtype(s: &str) -> Result<DType, String> {
    Ok(match s {
        "f32" => DType::F32,
        "f64" => DType::F64,
        "i32" => DType::I32,
        "i64" => DType::I64,
        "i8" => DType::I8,
        "i16" => DType::I16,
        "u8" => DType::U8,
        "u16" => DType::U16,
        "u32" => DType::U32,
        "u64" => DType::U64,
        "f16" => DType::F16,
        "c64" => DType::C64,
        "c128" => DType::C128,
        "bool" => DType::Bool,
        _ => return Err(format!("unknown dtype `{s}`")),
    })
}

/// Evaluates an integer expression of size variables: `+ - *` and integers, left to
/// right with `*` binding tighter (no parentheses).
pub fn eval(e: &str, env: &[(String, i64)]) -> Result<i64, String> {
    let atom = |t: &str| -> Result<i64, String> {
        let t = t.trim();
        if let Ok(v) = t.parse::<i64>() {
            return Ok(v);
        }
        env.iter()
            .find(|(n, _)| n == t)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("unknown size `{t}` in `{e}`"))
    };
    let mut total = 0i64;
    let mut sign = 1i64;
    let mut term = String::new();
    let flush = |term: &str, sign: i64, total: &mut i64| -> Result<(), String> {
        if term.trim().is_empty() {
            return Ok(());
        }
        let mut p = 1i64;
        for f in term.split('*') {
            p *= atom(f)?;
        }
        *total += sign * p;
        Ok(())
    };
    for c in e.chars() {
        match c {
            '+' | '-' => {
                flush(&term, sign, &mut total)?;
                term.clear();
                sign = if c == '-' { -1 } else { 1 };
            }
            _ => term.push(c),
        }
    }
    flush(&term, sign, &mut total)?;
    Ok(total)
}

/// The `# test:` specs of a source file, with the function each one is written above.
pub fn specs_in(text: &str) -> Result<Vec<(String, Spec)>, String> {
    let mut out = vec![];
    let mut pending: Vec<Spec> = vec![];
    for (no, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(s) = t.strip_prefix("# test:") {
            pending.push(Spec::parse(s.trim()).map_err(|e| format!("line {}: {e}", no + 1))?);
        } else if let Some(rest) = t.strip_prefix("def ") {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            for s in pending.drain(..) {
                out.push((name.clone(), s));
            }
        }
    }
    Ok(out)
}

/// Compares two values in units in the last place of the type of `got` (float32
/// results are compared in float32 ulps even against a float64 reference); returns a
/// description of the first element more than `ulp` apart.
pub fn compare_ulp(what: &str, got: &HostValue, want: &HostValue, ulp: u64) -> Result<(), String> {
    let g = got.to_array();
    let w = want.to_array();
    if g.len() != w.len() {
        return Err(format!("{what}: {} elements, expected {}", g.len(), w.len()));
    }
    let f32ish = g.dtype == DType::F32;
    for i in 0..g.len() {
        let (a, b) = (g.get_f64(i), w.get_f64(i));
        if a == b || (a.is_nan() && b.is_nan()) {
            continue;
        }
        let d = if f32ish { ulps_f32(a as f32, b as f32) } else { ulps_f64(a, b) };
        if d > ulp {
            return Err(format!(
                "{what}[{i}] = {a:e}, expected {b:e} ({d} ulp apart, at most {ulp} allowed)"
            ));
        }
    }
    Ok(())
}

/// Distance in float64 units (NaN: `u64::MAX`).
pub fn ulps_f64(a: f64, b: f64) -> u64 {
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    key(a).abs_diff(key(b))
}

/// Distance in float32 units (NaN: `u64::MAX`).
pub fn ulps_f32(a: f32, b: f32) -> u64 {
    let key = |x: f32| {
        let bits = x.to_bits() as i32 as i64;
        if bits < 0 { i32::MIN as i64 - bits } else { bits }
    };
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    key(a).abs_diff(key(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_spec() {
        let s = Spec::parse("a:f64[n] b:i32[n,m]@0..4 s:float k:int=n-1 | n=1,7 m=3 ulp=2").unwrap();
        assert_eq!(s.params.len(), 4);
        assert_eq!(s.params[1].1, Param::Array(DType::I32, vec!["n".into(), "m".into()], 0.0, 4.0));
        assert_eq!(s.cases(), 2);
        assert_eq!(s.ulp, 2);
        assert_eq!(eval("2*n+1-m", &s.env(1)), Ok(12));
    }

    #[test]
    fn ulps() {
        assert_eq!(ulps_f64(1.0, f64::from_bits(1.0f64.to_bits() + 2)), 2);
        assert_eq!(ulps_f64(-0.0, 0.0), 0);
        assert_eq!(ulps_f32(1.0, f32::from_bits(1.0f32.to_bits() + 1)), 1);
        assert!(ulps_f64(1.0, 2.0) > 1000);
    }
}
