//! Python's formatting of numbers, for `print(...)` in compiled code: `str()` of a
//! Python float, an int, a bool and NumPy's float32 scalars, and the format
//! mini-language of f-strings (`{x:.3f}`, `{n:5d}`, `{x:>10.2e}`, `{n:,}`).
//!
//! A `print` is compiled to an `appy.print` op whose `pieces` attribute lists literal
//! text and value fields; [`Piece`] encodes them as plain ASCII (hex for text) so the
//! attribute needs no escaping. Both back ends format with [`print_line`].

/// One piece of a printed line.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Piece {
    /// Literal text.
    Text(String),
    /// The next value operand, of `kind`, with a format spec (empty: `str()`).
    Value(Kind, String),
}

/// How a printed value is typed (how `str()` shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    /// A Python float or `np.float64` (shortest repr, scientific below 1e-4 and from 1e16).
    F64,
    /// `np.float32` (shortest float32 repr, scientific below 1e-4 and from 1e6).
    F32,
    /// An integer.
    Int,
    /// A bool (`True`/`False`).
    Bool,
}

/// A value to print.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    /// A float (float32 values are exact in f64).
    F(f64),
    /// An integer.
    I(i64),
}

impl Piece {
    /// The ASCII encoding used in the `pieces` attribute.
    pub fn encode(&self) -> String {
        match self {
            Piece::Text(t) => format!("t{}", hex(t)),
            Piece::Value(k, spec) => {
                let c = match k {
                    Kind::F64 => 'd',
                    Kind::F32 => 'f',
                    Kind::Int => 'i',
                    Kind::Bool => 'b',
                };
                format!("v{c}{}", hex(spec))
            }
        }
    }

    /// Decodes [`Piece::encode`].
    pub fn decode(s: &str) -> Option<Piece> {
        let mut chars = s.chars();
        match chars.next()? {
            't' => Some(Piece::Text(unhex(chars.as_str())?)),
            'v' => {
                let k = match chars.next()? {
                    'd' => Kind::F64,
                    'f' => Kind::F32,
                    'i' => Kind::Int,
                    'b' => Kind::Bool,
                    _ => return None,
                };
                Some(Piece::Value(k, unhex(chars.as_str())?))
            }
            _ => None,
        }
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// The value of the 64 bits an `appy.print` operand carries for a field of `kind`.
pub fn from_bits(kind: Kind, bits: i64) -> Val {
    match kind {
        Kind::F64 => Val::F(f64::from_bits(bits as u64)),
        Kind::F32 => Val::F(f32::from_bits(bits as u32) as f64),
        Kind::Int | Kind::Bool => Val::I(bits),
    }
}

/// The pieces of an `appy.print` op's `pieces` attribute (`["t...", "vd..."]`).
pub fn parse_pieces(attr: &str) -> Option<Vec<Piece>> {
    let inner = attr.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| Piece::decode(s.trim_matches('"')))
        .collect()
}

/// The text of a printed line (without the final newline): each piece in order, the
/// values taken from `vals`. A malformed spec (already checked at compile time) prints
/// the value with `str()`.
pub fn print_line(pieces: &[Piece], vals: &[Val]) -> String {
    let mut out = String::new();
    let mut it = vals.iter();
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Value(k, spec) => {
                let v = it.next().copied().unwrap_or(Val::I(0));
                out.push_str(&format_value(*k, v, spec).unwrap_or_else(|_| str_of(*k, v)));
            }
        }
    }
    out
}

/// `str(v)`.
pub fn str_of(k: Kind, v: Val) -> String {
    match (k, v) {
        (Kind::Bool, Val::I(i)) => if i != 0 { "True" } else { "False" }.to_string(),
        (Kind::Int, Val::I(i)) => i.to_string(),
        (Kind::F32, Val::F(x)) => repr_float(x, true),
        (_, Val::F(x)) => repr_float(x, false),
        (_, Val::I(i)) => i.to_string(),
    }
}

/// Python's `repr` of a float (`f32`: NumPy's `str` of a float32 scalar).
pub fn repr_float(x: f64, f32: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Shortest round-trip digits and the decimal exponent.
    let sci = if f32 { format!("{:e}", x as f32) } else { format!("{x:e}") };
    let (mant, exp) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    // Python decides by the exponent of the shortest digits; NumPy's float32 by the
    // value itself (`float32(1e-4)` is just below 1e-4 and prints as `1e-04`).
    let positional = if f32 {
        (1e-4..1e6).contains(&x.abs())
    } else {
        (-4..16).contains(&exp)
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if positional {
        if exp >= 0 {
            let e = exp as usize;
            if digits.len() > e + 1 {
                out.push_str(&digits[..e + 1]);
                out.push('.');
                out.push_str(&digits[e + 1..]);
            } else {
                out.push_str(&digits);
                out.push_str(&"0".repeat(e + 1 - digits.len()));
                out.push_str(".0");
            }
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&exp_suffix('e', exp));
    }
    out
}

fn exp_suffix(e: char, exp: i32) -> String {
    format!("{e}{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// A parsed format spec: `[[fill]align][sign][#][0][width][grouping][.precision][type]`.
#[derive(Debug, Default, PartialEq)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    alt: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    ty: Option<char>,
}

fn parse_spec(s: &str) -> Result<Spec, String> {
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut sp = Spec::default();
    let is_align = |ch: char| matches!(ch, '<' | '>' | '^' | '=');
    if c.len() >= 2 && is_align(c[1]) {
        sp.fill = Some(c[0]);
        sp.align = Some(c[1]);
        i = 2;
    } else if !c.is_empty() && is_align(c[0]) {
        sp.align = Some(c[0]);
        i = 1;
    }
    if i < c.len() && matches!(c[i], '+' | '-' | ' ') {
        sp.sign = Some(c[i]);
        i += 1;
    }
    if i < c.len() && c[i] == '#' {
        sp.alt = true;
        i += 1;
    }
    if i < c.len() && c[i] == '0' {
        sp.zero = true;
        i += 1;
    }
    let start = i;
    while i < c.len() && c[i].is_ascii_digit() {
        i += 1;
    }
    if i > start {
        sp.width = c[start..i].iter().collect::<String>().parse().map_err(|_| "bad width")?;
    }
    if i < c.len() && matches!(c[i], ',' | '_') {
        sp.grouping = Some(c[i]);
        i += 1;
    }
    if i < c.len() && c[i] == '.' {
        i += 1;
        let s0 = i;
        while i < c.len() && c[i].is_ascii_digit() {
            i += 1;
        }
        if i == s0 {
            return Err("format specifier missing precision".into());
        }
        sp.precision = Some(c[s0..i].iter().collect::<String>().parse().map_err(|_| "bad precision")?);
    }
    if i < c.len() {
        sp.ty = Some(c[i]);
        i += 1;
    }
    if i != c.len() {
        return Err(format!("invalid format specifier `{s}`"));
    }
    Ok(sp)
}

/// Checks a format spec for a value of kind `k` (at compile time).
pub fn check_spec(k: Kind, spec: &str) -> Result<(), String> {
    let v = match k {
        Kind::F64 | Kind::F32 => Val::F(1.5),
        _ => Val::I(1),
    };
    format_value(k, v, spec).map(|_| ())
}

/// `format(v, spec)`.
pub fn format_value(k: Kind, v: Val, spec: &str) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(str_of(k, v));
    }
    let sp = parse_spec(spec)?;
    let float = matches!(k, Kind::F64 | Kind::F32);
    let ty = sp.ty;
    let (neg, body) = match (ty, v) {
        (Some('d' | 'b' | 'o' | 'x' | 'X' | 'n'), Val::F(_)) if float => {
            return Err(format!("unknown format code '{}' for a float", ty.unwrap_or('d')));
        }
        (Some('d' | 'n') | None, Val::I(i)) if !float && sp.precision.is_none() => {
            let s = group(&i.unsigned_abs().to_string(), sp.grouping);
            (i < 0, s)
        }
        (Some('b'), Val::I(i)) => (i < 0, prefixed(&format!("{:b}", i.unsigned_abs()), "0b", sp.alt)),
        (Some('o'), Val::I(i)) => (i < 0, prefixed(&format!("{:o}", i.unsigned_abs()), "0o", sp.alt)),
        (Some('x'), Val::I(i)) => (i < 0, prefixed(&format!("{:x}", i.unsigned_abs()), "0x", sp.alt)),
        (Some('X'), Val::I(i)) => (i < 0, prefixed(&format!("{:X}", i.unsigned_abs()), "0X", sp.alt)),
        (Some('s'), _) => {
            let s = str_of(k, v);
            return Ok(pad(&s, &sp, '<'));
        }
        (None, Val::I(_)) if !float => return Err("precision not allowed in integer format specifier".into()),
        (t, _) => {
            let x = match v {
                Val::F(x) => x,
                Val::I(i) => i as f64,
            };
            let neg = x.is_sign_negative() && !(x == 0.0 && t.is_none());
            let a = x.abs();
            let s = match t {
                Some('f' | 'F') => fixed(a, sp.precision.unwrap_or(6), t == Some('F')),
                Some('e' | 'E') => sci(a, sp.precision.unwrap_or(6), t.unwrap_or('e')),
                Some('g' | 'G') => general(a, sp.precision.unwrap_or(6), sp.alt, t == Some('G')),
                Some('%') => format!("{}%", fixed(a * 100.0, sp.precision.unwrap_or(6), false)),
                None => match sp.precision {
                    Some(p) => general(a, p, sp.alt, false),
                    None => repr_float(a, k == Kind::F32),
                },
                Some(c) => return Err(format!("unknown format code '{c}'")),
            };
            let s = if a.is_finite() { group_float(&s, sp.grouping) } else { s };
            (neg && !x.is_nan(), s)
        }
    };
    let sign = match (neg, sp.sign) {
        (true, _) => "-",
        (false, Some('+')) => "+",
        (false, Some(' ')) => " ",
        _ => "",
    };
    if sp.zero && sp.align.is_none() {
        let w = sp.width.saturating_sub(sign.len());
        return Ok(format!("{sign}{body:0>w$}"));
    }
    if sp.align == Some('=') {
        let fill = sp.fill.unwrap_or(' ');
        let n = sp.width.saturating_sub(sign.len() + body.chars().count());
        return Ok(format!("{sign}{}{body}", fill.to_string().repeat(n)));
    }
    Ok(pad(&format!("{sign}{body}"), &sp, '>'))
}

fn prefixed(s: &str, p: &str, alt: bool) -> String {
    if alt { format!("{p}{s}") } else { s.to_string() }
}

fn pad(s: &str, sp: &Spec, default: char) -> String {
    let n = s.chars().count();
    if n >= sp.width {
        return s.to_string();
    }
    let fill = sp.fill.unwrap_or(' ').to_string();
    let k = sp.width - n;
    match sp.align.unwrap_or(default) {
        '<' => format!("{s}{}", fill.repeat(k)),
        '^' => format!("{}{s}{}", fill.repeat(k / 2), fill.repeat(k - k / 2)),
        _ => format!("{}{s}", fill.repeat(k)),
    }
}

fn group(digits: &str, sep: Option<char>) -> String {
    let Some(sep) = sep else { return digits.to_string() };
    let b = digits.as_bytes();
    let mut out = String::new();
    for (i, c) in b.iter().enumerate() {
        if i > 0 && (b.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(*c as char);
    }
    out
}

fn group_float(s: &str, sep: Option<char>) -> String {
    if sep.is_none() {
        return s.to_string();
    }
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    format!("{}{}", group(&s[..end], sep), &s[end..])
}

fn special(a: f64, upper: bool) -> Option<String> {
    let s = if a.is_nan() {
        "nan"
    } else if a.is_infinite() {
        "inf"
    } else {
        return None;
    };
    Some(if upper { s.to_uppercase() } else { s.to_string() })
}

fn fixed(a: f64, p: usize, upper: bool) -> String {
    special(a, upper).unwrap_or_else(|| format!("{a:.p$}"))
}

fn sci(a: f64, p: usize, e: char) -> String {
    if let Some(s) = special(a, e == 'E') {
        return s;
    }
    let s = format!("{a:.p$e}");
    let (m, x) = s.split_once('e').expect("an exponent");
    format!("{m}{}", exp_suffix(e, x.parse().expect("an integer")))
}

fn general(a: f64, p: usize, alt: bool, upper: bool) -> String {
    if let Some(s) = special(a, upper) {
        return s;
    }
    let p = p.max(1);
    if a == 0.0 {
        return if alt { format!("{:.*}", p - 1, 0.0) } else { "0".into() };
    }
    // The exponent after rounding to p significant digits.
    let s = format!("{a:.*e}", p - 1);
    let exp: i32 = s.split_once('e').expect("an exponent").1.parse().expect("an integer");
    let out = if -4 <= exp && exp < p as i32 {
        format!("{a:.*}", (p as i32 - 1 - exp).max(0) as usize)
    } else {
        sci(a, p - 1, if upper { 'E' } else { 'e' })
    };
    if alt {
        return out;
    }
    // Trailing zeros (and a trailing point) go.
    match out.find(['e', 'E']) {
        Some(i) => {
            let (m, e) = out.split_at(i);
            let m = if m.contains('.') {
                m.trim_end_matches('0').trim_end_matches('.')
            } else {
                m
            };
            format!("{m}{e}")
        }
        None if out.contains('.') => out.trim_end_matches('0').trim_end_matches('.').to_string(),
        None => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_like_python_and_numpy() {
        let cases = [
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (100.0, "100.0"),
            (123456789.0, "123456789.0"),
            (1e-4, "0.0001"),
            (1e22, "1e+22"),
            (-0.0, "-0.0"),
            (1.0 / 3.0, "0.3333333333333333"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(repr_float(x, false), want, "{x}");
        }
        let f32_cases = [
            (0.1f32, "0.1"),
            (123456789.0, "1.2345679e+08"),
            (1e-4, "1e-04"),
            (999999.9, "999999.9"),
            (1e6, "1e+06"),
            (1.0 / 3.0, "0.33333334"),
            (65536.0, "65536.0"),
        ];
        for (x, want) in f32_cases {
            assert_eq!(repr_float(x as f64, true), want, "{x}");
        }
    }

    #[test]
    fn format_specs_like_python() {
        // f'{2.45678:.3f}|{2:5d}|{1e-7:e}|{0.5:g}|{123456789:,}|{0.25:%}|{7:+d}|{3.5:>8.2f}|{3:x}'
        let got = [
            format_value(Kind::F64, Val::F(2.45678), ".3f").unwrap(),
            format_value(Kind::Int, Val::I(2), "5d").unwrap(),
            format_value(Kind::F64, Val::F(1e-7), "e").unwrap(),
            format_value(Kind::F64, Val::F(0.5), "g").unwrap(),
            format_value(Kind::Int, Val::I(123456789), ",").unwrap(),
            format_value(Kind::F64, Val::F(0.25), "%").unwrap(),
            format_value(Kind::Int, Val::I(7), "+d").unwrap(),
            format_value(Kind::F64, Val::F(3.5), ">8.2f").unwrap(),
            format_value(Kind::Int, Val::I(3), "x").unwrap(),
        ]
        .join("|");
        assert_eq!(got, "2.457|    2|1.000000e-07|0.5|123,456,789|25.000000%|+7|    3.50|3");
        assert_eq!(format_value(Kind::F64, Val::F(1234567.0), "g").unwrap(), "1.23457e+06");
        assert_eq!(format_value(Kind::F64, Val::F(-2.5), "08.2f").unwrap(), "-0002.50");
        assert_eq!(format_value(Kind::Int, Val::I(5), "*^7").unwrap(), "***5***");
        assert!(format_value(Kind::F64, Val::F(1.0), "d").is_err());
        assert!(check_spec(Kind::Int, ".q").is_err());
    }

    #[test]
    fn pieces_round_trip() {
        let ps = vec![
            Piece::Text("a \"quoted\"\nline ".into()),
            Piece::Value(Kind::F32, ".3f".into()),
            Piece::Value(Kind::Bool, String::new()),
        ];
        for p in &ps {
            assert_eq!(Piece::decode(&p.encode()).as_ref(), Some(p));
        }
        assert_eq!(print_line(&ps, &[Val::F(0.5), Val::I(1)]), "a \"quoted\"\nline 0.500True");
    }
}
