//! A small FileCheck: `CHECK:`, `CHECK-NEXT:`, `CHECK-SAME:`, `CHECK-NOT:` and
//! `CHECK-LABEL:` directives (in `//` or `#` comments), matched in order against the
//! output; `{{regex}}` embeds a regular expression, `[[NAME:regex]]` captures what the
//! regex matched into a variable and `[[NAME]]` matches a captured value literally;
//! everything else matches literally, with runs of whitespace matching any whitespace.

use regex::Regex;

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Check,
    Next,
    Same,
    Not,
    Label,
}

struct Directive {
    kind: Kind,
    text: String,
    line: usize,
}

type Vars = std::collections::HashMap<String, String>;

/// The regex of a directive, with the variables captured so far substituted.
fn pattern(p: &str, vars: &Vars) -> Result<Regex, String> {
    let mut out = String::new();
    let mut rest = p.trim();
    while !rest.is_empty() {
        let re = rest.find("{{");
        let var = rest.find("[[");
        match (re, var) {
            (Some(start), v) if v.is_none_or(|v| start < v) => {
                out.push_str(&literal(&rest[..start]));
                let end = rest[start + 2..].find("}}").ok_or_else(|| format!("unterminated {{{{ in `{p}`"))?;
                out.push_str(&format!("(?:{})", &rest[start + 2..start + 2 + end]));
                rest = &rest[start + 2 + end + 2..];
            }
            (_, Some(start)) => {
                out.push_str(&literal(&rest[..start]));
                let end = rest[start + 2..].find("]]").ok_or_else(|| format!("unterminated [[ in `{p}`"))?;
                let inner = &rest[start + 2..start + 2 + end];
                match inner.split_once(':') {
                    Some((name, re)) => out.push_str(&format!("(?P<{name}>{re})")),
                    None => {
                        let v = vars.get(inner).ok_or_else(|| format!("undefined variable [[{inner}]] in `{p}`"))?;
                        out.push_str(&regex::escape(v));
                    }
                }
                rest = &rest[start + 2 + end + 2..];
            }
            _ => {
                out.push_str(&literal(rest));
                break;
            }
        }
    }
    Regex::new(&out).map_err(|e| format!("bad pattern `{p}`: {e}"))
}

/// Records the variables a match defined.
fn capture(re: &Regex, hay: &str, vars: &mut Vars) {
    if let Some(c) = re.captures(hay) {
        for name in re.capture_names().flatten() {
            if let Some(m) = c.name(name) {
                vars.insert(name.to_string(), m.as_str().to_string());
            }
        }
    }
}

fn literal(s: &str) -> String {
    let mut out = String::new();
    let mut ws = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if !ws {
                out.push_str(r"\s+");
            }
            ws = true;
        } else {
            ws = false;
            out.push_str(&regex::escape(&c.to_string()));
        }
    }
    out
}

fn directives(check_file: &str, prefix: &str) -> Result<Vec<Directive>, String> {
    let mut out = vec![];
    for (i, line) in check_file.lines().enumerate() {
        let t = line.trim_start().trim_start_matches("//").trim_start_matches('#').trim_start();
        let Some(t) = t.strip_prefix(prefix) else { continue };
        for (tag, kind) in [
            ("-NEXT:", Kind::Next),
            ("-SAME:", Kind::Same),
            ("-NOT:", Kind::Not),
            ("-LABEL:", Kind::Label),
            (":", Kind::Check),
        ] {
            if let Some(rest) = t.strip_prefix(tag) {
                // Syntax errors surface now; undefined variables when matching.
                if !rest.contains("[[") {
                    pattern(rest, &Vars::new())?;
                }
                out.push(Directive {
                    kind,
                    text: rest.trim().to_string(),
                    line: i + 1,
                });
                break;
            }
        }
    }
    if out.is_empty() {
        return Err("no CHECK directives".into());
    }
    Ok(out)
}

/// Checks `output` against the `CHECK` directives in `check_file`.
pub fn check(check_file: &str, output: &str) -> Result<(), String> {
    check_prefix(check_file, output, "CHECK")
}

/// Checks `output` against the directives with prefix `prefix` (`--check-prefix`).
pub fn check_prefix(check_file: &str, output: &str, prefix: &str) -> Result<(), String> {
    let ds = directives(check_file, prefix)?;
    let lines: Vec<&str> = output.lines().collect();
    // Position: (line index, column within line) after the last match.
    let mut pos = (0usize, 0usize);
    let mut last_line: Option<usize> = None;
    let mut pending_not: Vec<&Directive> = vec![];
    let mut vars = Vars::new();
    for d in &ds {
        let re = if d.kind == Kind::Not {
            None
        } else {
            Some(pattern(&d.text, &vars).map_err(|e| format!("line {}: {e}", d.line))?)
        };
        let re = re.as_ref();
        match d.kind {
            Kind::Not => pending_not.push(d),
            Kind::Same => {
                let l = last_line.ok_or_else(|| format!("line {}: CHECK-SAME without a previous match", d.line))?;
                let hay = &lines[l][pos.1..];
                let re = re.expect("compiled");
                capture(re, hay, &mut vars);
                let m = re.find(hay).ok_or_else(|| {
                    format!(
                        "line {}: CHECK-SAME: `{}` not found on output line {}: {}",
                        d.line,
                        d.text,
                        l + 1,
                        lines[l]
                    )
                })?;
                pos = (l, pos.1 + m.end());
            }
            Kind::Next => {
                let l = last_line.map(|l| l + 1).unwrap_or(0);
                let line = lines
                    .get(l)
                    .ok_or_else(|| format!("line {}: CHECK-NEXT: `{}`: output ended", d.line, d.text))?;
                let re = re.expect("compiled");
                let m = re
                    .find(line)
                    .ok_or_else(|| format!("line {}: CHECK-NEXT: `{}` not on the next line; it is: {}", d.line, d.text, line))?;
                capture(re, line, &mut vars);
                check_nots(&pending_not, &lines, pos, (l, m.start()), &vars)?;
                pending_not.clear();
                last_line = Some(l);
                pos = (l, m.end());
            }
            Kind::Check | Kind::Label => {
                let mut found = None;
                for (l, line) in lines.iter().enumerate().skip(pos.0) {
                    let start = if l == pos.0 { pos.1 } else { 0 };
                    if start > line.len() {
                        continue;
                    }
                    let re = re.expect("compiled");
                    if let Some(m) = re.find(&line[start..]) {
                        capture(re, &line[start..], &mut vars);
                        found = Some((l, start + m.start(), start + m.end()));
                        break;
                    }
                }
                let (l, s, e) = found.ok_or_else(|| {
                    format!(
                        "line {}: {:?}: `{}` not found after output line {}\n--- output ---\n{}",
                        d.line,
                        d.kind,
                        d.text,
                        pos.0 + 1,
                        output
                    )
                })?;
                check_nots(&pending_not, &lines, pos, (l, s), &vars)?;
                pending_not.clear();
                last_line = Some(l);
                pos = (l, e);
            }
        }
    }
    check_nots(&pending_not, &lines, pos, (lines.len(), 0), &vars)?;
    Ok(())
}

fn check_nots(nots: &[&Directive], lines: &[&str], from: (usize, usize), to: (usize, usize), vars: &Vars) -> Result<(), String> {
    for d in nots {
        let re = pattern(&d.text, vars).map_err(|e| format!("line {}: {e}", d.line))?;
        for (l, line) in lines.iter().enumerate().take(to.0.min(lines.len()).max(from.0)).skip(from.0) {
            let s = if l == from.0 { from.1.min(line.len()) } else { 0 };
            let e = if l == to.0 { to.1.min(line.len()) } else { line.len() };
            if s <= e && re.is_match(&line[s..e]) {
                return Err(format!(
                    "line {}: CHECK-NOT: `{}` found on output line {}: {}",
                    d.line,
                    d.text,
                    l + 1,
                    line
                ));
            }
        }
        if to.0 < lines.len() && from.0 != to.0 {
            let line = lines[to.0];
            if re.is_match(&line[..to.1.min(line.len())]) {
                return Err(format!(
                    "line {}: CHECK-NOT: `{}` found on output line {}",
                    d.line,
                    d.text,
                    to.0 + 1
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn basics() {
        let out = "module {\n  func.func @f(%a: i64)\n    scf.parallel x {appy.lanes}\n  return\n}";
        assert!(
            check(
                "// CHECK: func.func @f\n// CHECK-NEXT: scf.parallel\n// CHECK-SAME: appy.lanes\n// CHECK-NOT: gpu\n// CHECK: return",
                out
            )
            .is_ok()
        );
        assert!(check("// CHECK: return\n// CHECK: func.func", out).is_err());
        assert!(check("// CHECK: func.func\n// CHECK-NEXT: return", out).is_err());
        assert!(check("// CHECK: func.func\n// CHECK-NOT: lanes\n// CHECK: return", out).is_err());
        assert!(check("// CHECK: @{{[a-z]+}}(", out).is_ok());
    }

    #[test]
    fn variables() {
        let out = "%alloc = memref.alloc() : memref<f64>\nfoo\nmemref.store %x, %alloc[]\nmemref.load %other[]";
        assert!(
            check(
                "// CHECK: %[[T:[a-z_0-9]+]] = memref.alloc\n// CHECK: memref.store %x, %[[T]][]",
                out
            )
            .is_ok()
        );
        assert!(check("// CHECK: %[[T:[a-z_0-9]+]] = memref.alloc\n// CHECK: memref.load %[[T]][]", out).is_err());
        assert!(
            check(
                "// CHECK: %[[T:[a-z_0-9]+]] = memref.alloc\n// CHECK-NOT: load %[[T]]\n// CHECK: load",
                out
            )
            .is_ok()
        );
        assert!(check("// CHECK: memref.load %[[U]]", out).is_err());
    }
}
