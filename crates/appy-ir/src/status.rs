//! The status buffer: how compiled code reports runtime events to the host.
//!
//! A function that needs one gets a trailing parameter, an `i64` array of
//! [`STATUS_LEN`] elements that the runtime zeroes before the call and reads after it:
//!
//! | element | meaning |
//! |---|---|
//! | 0 | an error: an index out of bounds (checked mode), a negative dimension of a new array, a negative exponent of a NumPy integer power, or a loop whose trip count breaks an `assume` clause; set by an atomic max to 1, and the first thread to set it records 1–4 |
//! | 1 | the site (1-based, into [`Status::sites`]) of the subscript, allocation or power |
//! | 2 | the index as written (before negative indices are counted from the end), the dimension, the exponent, or the trip count |
//! | 3 | the size of the axis, or the multiple assumed |
//! | 4 | the axis |
//! | 5 | a site where an integer `//` or `%` divided by zero (the result is 0, as in NumPy) |
//! | 6 | a site where `//` overflowed (`INT64_MIN // -1`, as in NumPy the result wraps) |
//!
//! An error does not stop the running code, but the access out of bounds does not
//! happen (a load gives 0, a store is skipped; a negative dimension allocates an empty
//! array; a negative power is 1) and the runtime reports the error instead of results. Division by zero and
//! overflow are warnings, as in NumPy.

use serde::{Deserialize, Serialize};

/// Elements of the status buffer.
pub const STATUS_LEN: usize = 8;

/// What a site is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SiteKind {
    /// An array subscript (checked mode).
    Index,
    /// An integer `//`.
    FloorDiv,
    /// An integer `%`.
    Mod,
    /// A dimension of a new array (an error when negative).
    Alloc,
    /// The exponent of a NumPy integer power (an error when negative, as in NumPy).
    NegativePower,
    /// A `transform(assume(j, multiple=K))` clause: an error when loop `j`'s trip count
    /// (element 2) is not a multiple of `K` (element 3).
    Assume,
    /// An `assert` whose condition was false.
    Assert,
    /// A tuple stored into a row of another length (element 2: the tuple's length,
    /// element 3: the row's, element 4: the axis).
    Broadcast,
}

/// A place in the source that reports into the status buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// `FILE:LINE:COL`.
    pub loc: String,
    /// What it is.
    pub kind: SiteKind,
}

/// The sites of a function with a status parameter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Site `k` is reported as `k + 1`.
    pub sites: Vec<Site>,
}

impl Status {
    fn site(&self, id: i64) -> Option<&Site> {
        usize::try_from(id)
            .ok()
            .and_then(|k| k.checked_sub(1))
            .and_then(|k| self.sites.get(k))
    }

    /// Reads a status buffer after a call: `Err` with the error line when an index was
    /// out of bounds, else the warning lines (`FILE:LINE:COL: warning: ...`).
    pub fn decode(&self, buf: &[i64]) -> Result<Vec<String>, String> {
        let at = |k: usize| buf.get(k).copied().unwrap_or(0);
        if at(0) != 0 {
            let site = self.site(at(1));
            let loc = site.map(|s| s.loc.as_str()).unwrap_or("<unknown>");
            if site.is_some_and(|s| s.kind == SiteKind::NegativePower) {
                return Err(format!(
                    "{loc}: error: Integers to negative integer powers are not allowed (exponent {})",
                    at(2)
                ));
            }
            if site.is_some_and(|s| s.kind == SiteKind::Assume) {
                return Err(format!(
                    "{loc}: error: the assumption does not hold: the loop runs {} iterations, not a multiple of {}",
                    at(2),
                    at(3)
                ));
            }
            if site.is_some_and(|s| s.kind == SiteKind::Broadcast) {
                return Err(format!(
                    "{loc}: error: could not broadcast input array from shape ({},) into shape ({},)",
                    at(2),
                    at(3)
                ));
            }
            if site.is_some_and(|s| s.kind == SiteKind::Assert) {
                return Err(format!("{loc}: error: AssertionError: the assertion failed"));
            }
            if site.is_some_and(|s| s.kind == SiteKind::Alloc) {
                return Err(format!(
                    "{loc}: error: negative dimensions are not allowed (size {} for axis {})",
                    at(2),
                    at(4)
                ));
            }
            return Err(format!(
                "{loc}: error: index {} is out of bounds for axis {} with size {}",
                at(2),
                at(4),
                at(3)
            ));
        }
        let mut warnings = vec![];
        if let Some(s) = self.site(at(5)) {
            let what = if s.kind == SiteKind::Mod { "remainder" } else { "floor_divide" };
            warnings.push(format!(
                "{}: warning: divide by zero encountered in {what} (integer; the result is 0, as in NumPy)",
                s.loc
            ));
        }
        if let Some(s) = self.site(at(6)) {
            warnings.push(format!(
                "{}: warning: overflow encountered in floor_divide (the minimum integer // -1 wraps, as in NumPy)",
                s.loc
            ));
        }
        Ok(warnings)
    }
}

/// Whether a runtime error message is one of [`Status::decode`]'s (the user's
/// program's error, not the device's or the runtime's).
pub fn is_program_error(msg: &str) -> bool {
    msg.contains(": error: index ") && msg.contains(" is out of bounds for axis ")
        || msg.contains(": error: negative dimensions are not allowed")
        || msg.contains(": error: Integers to negative integer powers are not allowed")
        || msg.contains(": error: the assumption does not hold")
        || msg.contains(": error: AssertionError: ")
        || msg.contains(": error: could not broadcast input array")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_errors_and_warnings() {
        let st = Status {
            sites: vec![
                Site {
                    loc: "k.py:3:5".into(),
                    kind: SiteKind::Index,
                },
                Site {
                    loc: "k.py:4:9".into(),
                    kind: SiteKind::Mod,
                },
            ],
        };
        let e = st.decode(&[1, 1, 100500, 100000, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(e, "k.py:3:5: error: index 100500 is out of bounds for axis 0 with size 100000");
        let w = st.decode(&[0, 0, 0, 0, 0, 2, 0, 0]).unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("k.py:4:9: warning: divide by zero encountered in remainder"));
        assert!(st.decode(&[0; 8]).unwrap().is_empty());
        // A corrupt site id does not panic.
        assert!(st.decode(&[1, 99, 0, 0, 0, 0, 0, 0]).unwrap_err().starts_with("<unknown>"));
        assert!(is_program_error(&e));
        assert!(!is_program_error("kernel execution failed"));
        let p = Status {
            sites: vec![Site {
                loc: "k.py:5:16".into(),
                kind: SiteKind::NegativePower,
            }],
        };
        let e = p.decode(&[1, 1, -3, 0, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(
            e,
            "k.py:5:16: error: Integers to negative integer powers are not allowed (exponent -3)"
        );
        assert!(is_program_error(&e));
        let a = Status {
            sites: vec![Site {
                loc: "k.py:6:36".into(),
                kind: SiteKind::Assume,
            }],
        };
        let e = a.decode(&[1, 1, 12, 8, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(
            e,
            "k.py:6:36: error: the assumption does not hold: the loop runs 12 iterations, not a multiple of 8"
        );
        assert!(is_program_error(&e));
    }
}
