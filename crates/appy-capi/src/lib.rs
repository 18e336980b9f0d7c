//! A C ABI over the GPU runner, for C and C++ programs that hold device buffers and a
//! bundle compiled ahead of time (`appy compile --tune`). Python programs use the `appy`
//! package (`crates/appy-python`) instead, which compiles in-process.
//!
//! ```c
//! void *appy_load(const char *bundle_path, char *err, size_t errlen);
//! int   appy_call(void *h, size_t n, const int32_t *kinds, const uint64_t *ptrs,
//!                 const int64_t *ints, const double *floats, const int32_t *dtypes,
//!                 const int32_t *ranks, const int64_t *shapes, char *err, size_t errlen);
//! void  appy_free(void *h);
//! ```
//!
//! Argument `k` is a device array when `kinds[k] == 0` (`ptrs[k]` a device pointer in the
//! current process's primary CUDA context, `dtypes[k]` 0 f32 / 1 f64 / 2 i32 / 3 i64,
//! `ranks[k]` dimensions in `shapes[8k..8k+rank]`, C order), an integer when 1
//! (`ints[k]`), a float when 2 (`floats[k]`). Arrays are used in place, never copied.
//! Bundles compiled with `--tune` are autotuned per shape bucket. Errors return a
//! non-zero code and a message in `err`.

use appy_ir::bundle::Bundle;
use appy_ir::types::DType;
use appy_runtime::HostValue;
use appy_runtime::gpu::{Candidates, Gpu};
use std::ffi::{CStr, c_char};

/// A loaded bundle.
pub struct Handle {
    gpu: Gpu,
    bundle: Bundle,
    loaded: Candidates,
}

fn set_err(err: *mut c_char, len: usize, msg: &str) {
    if err.is_null() || len == 0 {
        return;
    }
    let bytes = msg.as_bytes();
    let n = bytes.len().min(len - 1);
    // SAFETY: the caller provides `len` writable bytes at `err`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), err as *mut u8, n);
        *err.add(n) = 0;
    }
}

fn load(path: &str) -> Result<Handle, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let bundle = Bundle::from_json(&text)?;
    let gpu = Gpu::open()?;
    let loaded = gpu.load_candidates(&bundle)?;
    Ok(Handle { gpu, bundle, loaded })
}

/// Loads a bundle (from `appy compile`); null on error.
///
/// # Safety
/// `path` is a NUL-terminated string; `err` points to `errlen` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn appy_load(path: *const c_char, err: *mut c_char, errlen: usize) -> *mut Handle {
    // SAFETY: the caller passes a NUL-terminated string.
    let path = unsafe { CStr::from_ptr(path) }.to_string_lossy().into_owned();
    match load(&path) {
        Ok(h) => Box::into_raw(Box::new(h)),
        Err(e) => {
            set_err(err, errlen, &e);
            std::ptr::null_mut()
        }
    }
}

/// Calls a loaded bundle; 0 on success.
///
/// # Safety
/// `h` comes from [`appy_load`]; the arrays have `n` entries (`shapes` 8 per argument);
/// device pointers are valid for the shapes given.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn appy_call(
    h: *mut Handle,
    n: usize,
    kinds: *const i32,
    ptrs: *const u64,
    ints: *const i64,
    floats: *const f64,
    dtypes: *const i32,
    ranks: *const i32,
    shapes: *const i64,
    err: *mut c_char,
    errlen: usize,
) -> i32 {
    if h.is_null() {
        set_err(err, errlen, "appy_call: null handle");
        return 1;
    }
    // SAFETY: `h` is a live handle from appy_load; the arrays have `n` (or 8n) entries.
    let (h, kinds, ptrs, ints, floats, dtypes, ranks, shapes) = unsafe {
        (
            &*h,
            std::slice::from_raw_parts(kinds, n),
            std::slice::from_raw_parts(ptrs, n),
            std::slice::from_raw_parts(ints, n),
            std::slice::from_raw_parts(floats, n),
            std::slice::from_raw_parts(dtypes, n),
            std::slice::from_raw_parts(ranks, n),
            std::slice::from_raw_parts(shapes, 8 * n),
        )
    };
    let mut args = vec![];
    for k in 0..n {
        let v = match kinds[k] {
            0 => {
                let dtype = match dtypes[k] {
                    0 => DType::F32,
                    1 => DType::F64,
                    2 => DType::I32,
                    3 => DType::I64,
                    d => {
                        set_err(err, errlen, &format!("argument {k}: unknown dtype code {d}"));
                        return 1;
                    }
                };
                let r = ranks[k].clamp(0, 8) as usize;
                let shape = shapes[8 * k..8 * k + r].iter().map(|d| (*d).max(0) as usize).collect();
                HostValue::Device {
                    ptr: ptrs[k],
                    dtype,
                    shape,
                }
            }
            1 => HostValue::Int(ints[k], DType::I64, true),
            2 => HostValue::Float(floats[k], DType::F64, true),
            x => {
                set_err(err, errlen, &format!("argument {k}: unknown kind {x}"));
                return 1;
            }
        };
        args.push(v);
    }
    let r = appy_runtime::tune::choose(&h.gpu, &h.bundle, &h.loaded, &args)
        .and_then(|c| Ok((c, h.loaded.get(&h.gpu, &h.bundle, c)?)))
        .and_then(|(c, l)| h.gpu.run(h.bundle.candidate(c), l, &mut args));
    match r {
        Ok(_) => 0,
        Err(e) => {
            set_err(err, errlen, &e.to_string());
            1
        }
    }
}

/// Frees a handle from [`appy_load`].
///
/// # Safety
/// `h` comes from [`appy_load`] and is not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn appy_free(h: *mut Handle) {
    if !h.is_null() {
        // SAFETY: `h` was made by Box::into_raw in appy_load.
        drop(unsafe { Box::from_raw(h) });
    }
}
