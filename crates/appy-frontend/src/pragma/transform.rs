//! The `transform(...)` clause of `#pragma parallel for`: loop transforms in Loopy's
//! model, each addressing a loop of the annotated nest by its variable.
//!
//! ```text
//! transform(split(j, 4, inner=unr), tag(k, unr))
//! split(VAR, FACTOR [, outer=TAG] [, inner=TAG])   FACTOR: an integer in [1, 4096],
//!                                                  or tune(F1, F2, ...): autotuned
//! tag(VAR, TAG)                                    TAG: g.N l.N unr ilp vec ord for
//! reorder(OUTER, INNER)                            interchange a perfect nest of two loops
//! join(OUTER, INNER)                               two nested parallel loops made one
//! prefetch(ARRAY)                                  the group's reads of an array parameter
//!                                                  loaded once into shared memory (GPU)
//! assume(VAR, multiple=K)                          the loop's trip count is a multiple of K
//!                                                  (checked at run time)
//! privatize(ARRAY)                                 a temporary used at [i] only: a scalar
//!                                                  of each iteration of the annotated loop
//! ```

use super::{PragmaParser, Tok, is_ident};
use crate::ast::{Ident, Transform, TransformKind};
use appy_ir::diag::{DResult, Span};
use appy_ir::schedule::Tag;

const FORMS: &str = "write `transform(split(j, 4, inner=unr))`, `transform(tag(j, unr))`, `transform(reorder(j, k))`, `transform(join(i, j))`, `transform(prefetch(a))`, `transform(privatize(tmp))` or `transform(assume(j, multiple=4))`; tags: g.N, l.N, unr, ilp, vec, ord, for";

/// The clause as it is written back (`split(j, 4, inner=unr)`).
pub(crate) fn transform_text(t: &Transform) -> String {
    match &t.kind {
        TransformKind::Split {
            factor,
            tune,
            outer,
            inner,
        } => {
            let f = if tune.is_empty() {
                factor.to_string()
            } else {
                format!("tune({})", tune.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
            };
            let mut s = format!("split({}, {f}", t.var.name);
            if let Some(o) = outer {
                s.push_str(&format!(", outer={o}"));
            }
            if let Some(i) = inner {
                s.push_str(&format!(", inner={i}"));
            }
            s + ")"
        }
        TransformKind::Tag(tag) => format!("tag({}, {tag})", t.var.name),
        TransformKind::Reorder(inner) => format!("reorder({}, {})", t.var.name, inner.name),
        TransformKind::Join(inner) => format!("join({}, {})", t.var.name, inner.name),
        TransformKind::Prefetch => format!("prefetch({})", t.var.name),
        TransformKind::Assume(k) => format!("assume({}, multiple={k})", t.var.name),
        TransformKind::Privatize => format!("privatize({})", t.var.name),
    }
}

impl PragmaParser<'_> {
    /// Parses `( item, ... )` after the word `transform` (`kw`, at `toks[i - 1]`),
    /// appending to `out`; returns the index after the closing parenthesis.
    pub(super) fn transform_clause(&self, toks: &[Tok<'_>], mut i: usize, kw: &Tok<'_>, out: &mut Vec<Transform>) -> DResult<usize> {
        let text = |k: usize| toks.get(k).map(|t| t.text);
        if text(i) != Some("(") {
            return Err(self.err(kw.span, "expected `(` after `transform`").with_note(FORMS));
        }
        i += 1;
        loop {
            let (t, next) = self.transform_item(toks, i, kw)?;
            out.push(t);
            i = next;
            match text(i) {
                Some(",") => i += 1,
                Some(")") => return Ok(i + 1),
                _ => {
                    return Err(self
                        .err(self.at(toks, i, kw), "expected `,` or `)` in `transform(...)`")
                        .with_note(FORMS));
                }
            }
        }
    }

    /// The span of `toks[i]`, or the end of the clause's keyword when it is past the end.
    fn at(&self, toks: &[Tok<'_>], i: usize, kw: &Tok<'_>) -> Span {
        toks.get(i).map_or_else(|| toks.last().map_or(kw.span, |t| t.span), |t| t.span)
    }

    /// One `split(...)` or `tag(...)`.
    fn transform_item(&self, toks: &[Tok<'_>], mut i: usize, kw: &Tok<'_>) -> DResult<(Transform, usize)> {
        let text = |k: usize| toks.get(k).map(|t| t.text);
        let Some(head) = toks
            .get(i)
            .filter(|t| matches!(t.text, "split" | "tag" | "reorder" | "join" | "prefetch" | "assume" | "privatize"))
        else {
            return Err(self
                .err(
                    self.at(toks, i, kw),
                    "expected `split(...)`, `tag(...)`, `reorder(...)`, `join(...)`, `prefetch(...)`, `privatize(...)` or `assume(...)` in `transform(...)`",
                )
                .with_note(FORMS));
        };
        i += 1;
        if text(i) != Some("(") {
            return Err(self.err(head.span, format!("expected `(` after `{}`", head.text)).with_note(FORMS));
        }
        i += 1;
        if head.text == "prefetch" || head.text == "privatize" {
            let var = self.loop_var(toks, i, kw, &format!("an array as the argument of `{}`", head.text))?;
            i += 1;
            if text(i) != Some(")") {
                return Err(self
                    .err(
                        self.at(toks, i, kw),
                        format!("expected `)` to close `{}(`: it takes one array", head.text),
                    )
                    .with_note(FORMS));
            }
            let span = Span::new(head.span.start, toks[i].span.end);
            let kind = if head.text == "prefetch" {
                TransformKind::Prefetch
            } else {
                TransformKind::Privatize
            };
            return Ok((Transform { var, kind, span }, i + 1));
        }
        let var = self.loop_var(toks, i, kw, &format!("a loop variable as the first argument of `{}`", head.text))?;
        i += 1;
        self.expect_comma(toks, i, kw)?;
        i += 1;
        let kind = if head.text == "assume" {
            let key = toks.get(i).filter(|t| t.text == "multiple");
            if key.is_none() || text(i + 1) != Some("=") {
                return Err(self
                    .err(self.at(toks, i, kw), "expected `multiple=K` in `assume(...)`")
                    .with_note(FORMS));
            }
            let k = toks.get(i + 2).and_then(|t| t.text.replace('_', "").parse::<i64>().ok());
            let Some(k) = k.filter(|k| (1..=1 << 30).contains(k)) else {
                return Err(self
                    .err(self.at(toks, i + 2, kw), "expected the multiple, an integer in [1, 2^30]")
                    .with_note(FORMS));
            };
            i += 3;
            TransformKind::Assume(k)
        } else if head.text == "reorder" || head.text == "join" {
            let what = format!("the inner loop's variable as the second argument of `{}`", head.text);
            let inner = self.loop_var(toks, i, kw, &what)?;
            i += 1;
            if head.text == "join" {
                TransformKind::Join(inner)
            } else {
                TransformKind::Reorder(inner)
            }
        } else if head.text == "tag" {
            let (tag, next) = self.tag(toks, i, kw)?;
            i = next;
            TransformKind::Tag(tag)
        } else {
            let mut tune = vec![];
            let factor = if text(i) == Some("tune") {
                let head = &toks[i];
                i += 1;
                if text(i) != Some("(") {
                    return Err(self.err(head.span, "expected `(` after `tune`").with_note(FORMS));
                }
                i += 1;
                loop {
                    tune.push(self.factor(toks, i, kw)?);
                    i += 1;
                    match text(i) {
                        Some(",") => i += 1,
                        Some(")") => break,
                        _ => {
                            return Err(self
                                .err(self.at(toks, i, kw), "expected `,` or `)` in `tune(...)`")
                                .with_note(FORMS));
                        }
                    }
                }
                i += 1;
                tune[0]
            } else {
                let f = self.factor(toks, i, kw)?;
                i += 1;
                f
            };
            let (mut outer, mut inner) = (None, None);
            while text(i) == Some(",") {
                i += 1;
                let key = toks.get(i).filter(|t| t.text == "outer" || t.text == "inner");
                let Some(key) = key else {
                    return Err(self
                        .err(self.at(toks, i, kw), "expected `outer=TAG` or `inner=TAG` in `split(...)`")
                        .with_note(FORMS));
                };
                i += 1;
                if text(i) != Some("=") {
                    return Err(self.err(key.span, format!("expected `=` after `{}`", key.text)).with_note(FORMS));
                }
                let (tag, next) = self.tag(toks, i + 1, kw)?;
                i = next;
                if key.text == "outer" {
                    outer = Some(tag);
                } else {
                    inner = Some(tag);
                }
            }
            TransformKind::Split {
                factor,
                tune,
                outer,
                inner,
            }
        };
        if text(i) != Some(")") {
            return Err(self
                .err(self.at(toks, i, kw), format!("expected `)` to close `{}(`", head.text))
                .with_note(FORMS));
        }
        let span = Span::new(head.span.start, toks[i].span.end);
        Ok((Transform { var, kind, span }, i + 1))
    }

    /// A loop variable at `toks[i]`; else an error "expected {what}".
    fn loop_var(&self, toks: &[Tok<'_>], i: usize, kw: &Tok<'_>, what: &str) -> DResult<Ident> {
        match toks.get(i) {
            Some(v) if is_ident(v.text) => Ok(Ident {
                name: crate::ast::normalize_ident(v.text),
                span: v.span,
            }),
            _ => Err(self.err(self.at(toks, i, kw), format!("expected {what}")).with_note(FORMS)),
        }
    }

    /// A split factor at `toks[i]`: an integer in [1, 4096].
    fn factor(&self, toks: &[Tok<'_>], i: usize, kw: &Tok<'_>) -> DResult<i64> {
        let f = toks.get(i).filter(|t| t.text.chars().all(|c| c.is_ascii_digit() || c == '_'));
        let factor = f.and_then(|t| t.text.replace('_', "").parse::<i64>().ok());
        factor.filter(|n| (1..=4096).contains(n)).ok_or_else(|| {
            self.err(self.at(toks, i, kw), "expected the split factor, an integer in [1, 4096]")
                .with_note(FORMS)
        })
    }

    fn expect_comma(&self, toks: &[Tok<'_>], i: usize, kw: &Tok<'_>) -> DResult<()> {
        if toks.get(i).map(|t| t.text) != Some(",") {
            return Err(self.err(self.at(toks, i, kw), "expected `,`").with_note(FORMS));
        }
        Ok(())
    }

    /// A tag: a word (`unr`), or `g`/`l`, `.`, an axis.
    fn tag(&self, toks: &[Tok<'_>], i: usize, kw: &Tok<'_>) -> DResult<(Tag, usize)> {
        let Some(w) = toks.get(i) else {
            return Err(self.err(self.at(toks, i, kw), "expected a tag").with_note(FORMS));
        };
        let (text, end, next) = match (toks.get(i + 1), toks.get(i + 2)) {
            (Some(dot), Some(axis)) if dot.text == "." && (w.text == "g" || w.text == "l") => {
                (format!("{}.{}", w.text, axis.text), axis.span.end, i + 3)
            }
            _ => (w.text.to_string(), w.span.end, i + 1),
        };
        match text.parse::<Tag>() {
            Ok(t) => Ok((t, next)),
            Err(e) => Err(self.err(Span::new(w.span.start, end), e).with_note(FORMS)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::{PragmaKind, TransformKind};
    use crate::pragma::parse_pragma;
    use appy_ir::diag::{SourceFile, Span};
    use appy_ir::schedule::Tag;

    fn parse(text: &str) -> Result<Vec<super::Transform>, String> {
        let file = SourceFile::new("p.py", text);
        match parse_pragma(&file, Span::new(0, text.len())) {
            Ok(p) => match p.kind {
                PragmaKind::ParallelFor { transforms, .. } => Ok(transforms),
                k => Err(format!("{k:?}")),
            },
            Err(d) => Err(d.to_string()),
        }
    }

    #[test]
    fn parses_splits_and_tags() {
        let t = parse("#pragma parallel for transform(split(j, 4, inner=unr), tag(k, ilp)) simd").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].var.name, "j");
        assert_eq!(
            t[0].kind,
            TransformKind::Split {
                factor: 4,
                tune: vec![],
                outer: None,
                inner: Some(Tag::Unr)
            }
        );
        let tuned = parse("#pragma parallel for transform(split(j, tune(2, 4, 8), inner=unr))").unwrap();
        assert!(matches!(&tuned[0].kind, TransformKind::Split { factor: 2, tune, .. } if tune == &[2, 4, 8]));
        assert_eq!(super::transform_text(&tuned[0]), "split(j, tune(2, 4, 8), inner=unr)");
        let e = parse("#pragma parallel for transform(split(j, tune(2, x)))").unwrap_err();
        assert!(e.contains("split factor, an integer"), "{e}");
        assert_eq!(t[1].kind, TransformKind::Tag(Tag::Ilp));
        let t = parse("#pragma parallel for transform(split(i, 128, outer=g.0, inner=l.0))").unwrap();
        assert_eq!(super::transform_text(&t[0]), "split(i, 128, outer=g.0, inner=l.0)");
    }

    #[test]
    fn refuses_malformed_clauses_with_the_forms() {
        let e = parse("#pragma parallel for transform(split(j, 0))").unwrap_err();
        assert!(
            e.contains("split factor, an integer in [1, 4096]") && e.contains("write `transform("),
            "{e}"
        );
        let e = parse("#pragma parallel for transform(split(j, 4, inner=par))").unwrap_err();
        assert!(e.contains("unknown tag `par`"), "{e}");
        let e = parse("#pragma parallel for transform(unroll(j))").unwrap_err();
        assert!(
            e.contains(
                "expected `split(...)`, `tag(...)`, `reorder(...)`, `join(...)`, `prefetch(...)`, `privatize(...)` or `assume(...)`"
            ),
            "{e}"
        );
        for (text, kind) in [
            ("prefetch(a)", TransformKind::Prefetch),
            ("privatize(tmp)", TransformKind::Privatize),
            ("assume(j, multiple=8)", TransformKind::Assume(8)),
        ] {
            let t = parse(&format!("#pragma parallel for transform({text})")).unwrap();
            assert_eq!(t[0].kind, kind);
            assert_eq!(super::transform_text(&t[0]), text);
        }
        let e = parse("#pragma parallel for transform(assume(j, 8))").unwrap_err();
        assert!(e.contains("expected `multiple=K` in `assume(...)`"), "{e}");
        let e = parse("#pragma parallel for transform(assume(j, multiple=0))").unwrap_err();
        assert!(e.contains("expected the multiple, an integer in [1, 2^30]"), "{e}");
        let e = parse("#pragma parallel for transform(prefetch(a, b))").unwrap_err();
        assert!(e.contains("expected `)` to close `prefetch(`: it takes one array"), "{e}");
        let r = parse("#pragma parallel for transform(reorder(j, k))").unwrap();
        assert_eq!(super::transform_text(&r[0]), "reorder(j, k)");
        let r = parse("#pragma parallel for transform(join(i, j))").unwrap();
        assert_eq!(super::transform_text(&r[0]), "join(i, j)");
        let e = parse("#pragma parallel for transform(tag(j, g.5))").unwrap_err();
        assert!(e.contains("axis must be 0, 1 or 2"), "{e}");
        let e = parse("#pragma parallel for transform(split(j, 4)").unwrap_err();
        assert!(e.contains("expected `,` or `)`"), "{e}");
    }
}
