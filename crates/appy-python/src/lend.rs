//! Host arrays of a GPU call: each is lent to the runtime in place (its memory moves to
//! the device and back, with no copy on the host), except an argument whose memory
//! overlaps an earlier one's, which gets a copy so that each argument moves once; a
//! copy writes back only the elements the call changed, so that an argument the call
//! only reads leaves the shared memory as the other arguments wrote it.

use crate::args::Arg;
use crate::errors::runtime_error;
use appy_runtime::HostValue;
use appy_runtime::array::{AlignedBytes, HostArray, bytes_of};
use pyo3::prelude::*;

/// For each argument copied rather than lent, its contents at the call's start (what
/// [`write_back`] compares with); `None` for the others.
pub type Before = Vec<Option<Vec<u8>>>;

/// The runtime's values for `args`, and what [`write_back`] needs.
pub fn host_values(py: Python<'_>, args: &[Arg]) -> PyResult<(Vec<HostValue>, Before)> {
    let mut vals = Vec::with_capacity(args.len());
    let mut before = Vec::with_capacity(args.len());
    // The memory lent so far.
    let mut lent: Vec<std::ops::Range<usize>> = vec![];
    for x in args {
        let (v, b) = match x {
            Arg::Host { ptr, dtype, shape } => {
                let n = bytes_of(*dtype, shape).map_err(|e| runtime_error(py, e.to_string()))?;
                let range = *ptr as usize..*ptr as usize + n;
                if n > 0 && !lent.iter().any(|r| r.start < range.end && range.start < r.end) {
                    lent.push(range);
                    // SAFETY: the caller's contiguous array of this shape (the runtime
                    // reads and writes it as bytes only, so element alignment is not
                    // needed), kept alive by the call's arguments, and lent to no
                    // other argument (one overlapping it gets a copy below).
                    let data = unsafe { AlignedBytes::borrowed(*ptr, n) };
                    let arr = HostArray {
                        dtype: *dtype,
                        shape: shape.clone(),
                        data,
                    };
                    (HostValue::Array(arr), None)
                } else {
                    // SAFETY: the caller's contiguous array of this shape (`n` bytes).
                    let now: &[u8] = if n > 0 {
                        unsafe { std::slice::from_raw_parts(*ptr, n) }
                    } else {
                        &[]
                    };
                    let arr = HostArray {
                        dtype: *dtype,
                        shape: shape.clone(),
                        data: AlignedBytes::from_slice(now),
                    };
                    (HostValue::Array(arr), Some(now.to_vec()))
                }
            }
            Arg::Device { ptr, dtype, shape } => (
                HostValue::Device {
                    ptr: *ptr,
                    dtype: *dtype,
                    shape: shape.clone(),
                },
                None,
            ),
            Arg::Scalar(v) => (v.clone(), None),
        };
        vals.push(v);
        before.push(b);
    }
    Ok((vals, before))
}

/// After the call: each copied argument's changed elements back into the caller's
/// memory (a lent one is that memory already).
pub fn write_back(args: &[Arg], vals: &[HostValue], before: &[Option<Vec<u8>>]) {
    for ((x, v), b) in args.iter().zip(vals).zip(before) {
        let (Arg::Host { ptr, .. }, HostValue::Array(arr)) = (x, v) else {
            continue;
        };
        if arr.data.is_empty() || std::ptr::eq(arr.data.as_ptr(), *ptr) {
            continue;
        }
        let es = arr.dtype.size().max(1);
        match b {
            Some(b) if b.len() == arr.data.len() => {
                for (k, (new, old)) in arr.data.chunks(es).zip(b.chunks(es)).enumerate() {
                    if new != old {
                        // SAFETY: element k of the caller's array, of the same size.
                        unsafe { std::ptr::copy_nonoverlapping(new.as_ptr(), ptr.add(k * es), new.len()) };
                    }
                }
            }
            // SAFETY: the caller's contiguous array, of the same size.
            _ => unsafe { std::ptr::copy_nonoverlapping(arr.data.as_ptr(), *ptr, arr.data.len()) },
        }
    }
}
