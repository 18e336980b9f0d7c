//! Autotuning (seed 001 §5.3): a bundle compiled with `--tune` carries one candidate
//! per vector length ([`appy_ir::TUNE_MVLS`]). On the first call for a *shape bucket*
//! (every array dimension and integer argument rounded up to a power of two), each
//! candidate is timed on copies of the arguments (the caller's data is never modified)
//! and the fastest is recorded in the persistent cache (`cache::dir()`), keyed on the
//! compiler's identity ([`crate::cache::COMPILER_ID`]), the function, its PTX (which
//! holds the libdevice code it links), the device name and the bucket. Later calls
//! in the same bucket, in this process or another, use the recorded choice. A corrupt or
//! unreadable entry is ignored and the candidates are timed again.
//! `APPY_PRINT_AUTOTUNING=1` prints every candidate's time and the choice.

use crate::array::HostValue;
use crate::error::{RunError, RunResult};
use crate::gpu::{BenchOptions, Candidates, Gpu};
use appy_ir::bundle::Bundle;

/// A size's bucket: the next power of two (0 and 1 as they are; negatives 0).
fn p2(x: i64) -> u64 {
    if x <= 1 { x.max(0) as u64 } else { (x as u64).next_power_of_two() }
}

/// The shape bucket of a call.
pub fn bucket(args: &[HostValue]) -> String {
    args.iter()
        .map(|a| match a {
            HostValue::Array(x) => format!(
                "[{}]",
                x.shape.iter().map(|d| p2(*d as i64).to_string()).collect::<Vec<_>>().join("x")
            ),
            HostValue::Device { shape, .. } => format!(
                "[{}]",
                shape.iter().map(|d| p2(*d as i64).to_string()).collect::<Vec<_>>().join("x")
            ),
            HostValue::Int(i, _, _) => p2(*i).to_string(),
            HostValue::Float(..) => "f".into(),
            HostValue::Bool(_) => "b".into(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn printing() -> bool {
    appy_ir::config::print_autotuning()
}

/// The cache key of a tuning decision.
pub fn key(gpu: &Gpu, b: &Bundle, args: &[HostValue]) -> String {
    key_on(&gpu.name(), b, args)
}

/// The cache key of a tuning decision on the device named `device`.
pub fn key_on(device: &str, b: &Bundle, args: &[HostValue]) -> String {
    let mut code = String::new();
    for k in 0..b.candidates() {
        let c = b.candidate(k);
        code.push_str(&format!("{};", label(c)));
        code.push_str(&c.ptx);
    }
    format!(
        "appy {} | tune | {} | {:016x} | {} | {}",
        crate::cache::COMPILER_ID,
        b.func,
        crate::cache::fnv(code.as_bytes()),
        device,
        bucket(args)
    )
}

/// Picks the candidate of `b` to run for `args`: from the cache, or by timing them.
pub fn choose(gpu: &Gpu, b: &Bundle, loaded: &Candidates, args: &[HostValue]) -> RunResult<usize> {
    choose_with(gpu, b, loaded, args, None)
}

/// How long autotuning may time candidates (seconds): it stops once over, between host
/// loop iterations or between calls, and the best candidate timed by then runs (the
/// first, when none was), in this process only. Timing every candidate three times
/// would make the first call of a long-running function (a time loop of many steps)
/// take many times as long, for a gain that the launch configuration rarely gives.
pub const TUNING_BUDGET: f64 = 1.0;

/// Candidates whose first time is within this factor of the best are timed again.
const RETIME: f64 = 1.25;

/// [`choose`] that asks `interrupt` between the host loop iterations of the timed
/// calls (Ctrl-C in Python): `true` stops with [`crate::error::RunError::Interrupted`]
/// and records nothing.
pub fn choose_with(
    gpu: &Gpu,
    b: &Bundle,
    loaded: &Candidates,
    args: &[HostValue],
    interrupt: Option<&dyn Fn() -> bool>,
) -> RunResult<usize> {
    let n = b.candidates();
    // Nothing to choose: one candidate, or no kernels at all (the work is library calls,
    // e.g. cuBLAS / cuSOLVER, which the vector length does not affect).
    if n == 1 || (0..n).all(|k| b.candidate(k).kernels.is_empty()) {
        return Ok(0);
    }
    // Decisions already made in this process (no key hashing, no file read, no
    // allocation per call). A collision of the bucket's hash, or a bundle freed and
    // another allocated at its address, could only pick another candidate of a bundle
    // with as many: every candidate computes the same results.
    let memo_key = (b as *const Bundle as usize, n, bucket_hash(args));
    if let Some(k) = MEMO.lock().expect("memo").get(&memo_key).copied().filter(|k| *k < n) {
        return Ok(k);
    }
    let k = choose_slow(gpu, b, loaded, args, interrupt)?;
    MEMO.lock().expect("memo").insert(memo_key, k);
    Ok(k)
}

type MemoKey = (usize, usize, u64);

/// A hash of the shape bucket of a call ([`bucket`]), computed without allocating.
pub fn bucket_hash(args: &[HostValue]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |x: u64| {
        for byte in x.to_le_bytes() {
            h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for a in args {
        match a {
            HostValue::Array(x) => {
                mix(1);
                mix(x.shape.len() as u64);
                x.shape.iter().for_each(|d| mix(p2(*d as i64)));
            }
            HostValue::Device { shape, .. } => {
                mix(1);
                mix(shape.len() as u64);
                shape.iter().for_each(|d| mix(p2(*d as i64)));
            }
            HostValue::Int(i, _, _) => {
                mix(2);
                mix(p2(*i));
            }
            HostValue::Float(..) => mix(3),
            HostValue::Bool(_) => mix(4),
        }
    }
    h
}
static MEMO: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<MemoKey, usize>>> = std::sync::LazyLock::new(Default::default);

fn choose_slow(gpu: &Gpu, b: &Bundle, loaded: &Candidates, args: &[HostValue], interrupt: Option<&dyn Fn() -> bool>) -> RunResult<usize> {
    let n = b.candidates();
    let key = key(gpu, b, args);
    let dir = crate::cache::dir();
    if let Some(d) = &dir
        && let Some(k) = recorded(d, &key, b)
    {
        if printing() {
            eprintln!("appy autotune: {} [{}]: {} (cached)", b.func, bucket(args), label(b.candidate(k)));
        }
        return Ok(k);
    }
    // Time the candidates on copies of the caller's device buffers (host arrays are
    // copied by the runner anyway).
    let mut copies = vec![];
    let mut targs = args.to_vec();
    let mut copy_failed = None;
    for a in &mut targs {
        if let HostValue::Device { ptr, dtype, shape } = a {
            let c: RunResult<_> = crate::array::bytes_of(*dtype, shape)
                .map_err(Into::into)
                .and_then(|bytes| gpu.device_copy(*ptr, bytes));
            match c {
                Ok(c) => {
                    copies.push(c);
                    *ptr = c;
                }
                Err(e) => {
                    copy_failed = Some(e);
                    break;
                }
            }
        }
    }
    if let Some(e) = copy_failed {
        for c in copies {
            gpu.free_copy(c);
        }
        return Err(e);
    }
    // Loading (the driver compiling each candidate's PTX) is not timed and does not
    // count against the budget: every candidate loads first.
    loaded.preload(&gpu.loader(), b);
    // The budget is asked between host loop iterations, with the caller's interruption.
    let t0 = std::time::Instant::now();
    let over = std::cell::Cell::new(false);
    let user_stop = std::cell::Cell::new(false);
    let stop = || {
        if interrupt.is_some_and(|f| f()) {
            user_stop.set(true);
            return true;
        }
        if t0.elapsed().as_secs_f64() > TUNING_BUDGET {
            over.set(true);
            return true;
        }
        false
    };
    let opts = BenchOptions {
        interrupt: Some(&stop),
        stop_after: Some(TUNING_BUDGET),
    };
    // Whether there is budget left for another candidate (the user did not stop).
    let go_on = || {
        if t0.elapsed().as_secs_f64() > TUNING_BUDGET {
            over.set(true);
        }
        !over.get() && !user_stop.get()
    };
    // One timing of candidate `k`: three calls; the first also moves the data, so the
    // best of the other two counts.
    let time = |k: usize| -> Option<f64> {
        let l = match loaded.get(gpu, b, k) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("autotuning: candidate {} failed to load: {e}", label(b.candidate(k)));
                return None;
            }
        };
        match gpu.bench_with(b.candidate(k), l, &targs, 3, &opts) {
            // A call longer than the budget (one kernel, no host loop to stop in).
            Ok(t) if t.len() < 3 => {
                over.set(true);
                None
            }
            Ok(t) => Some(t[1..].iter().copied().fold(f64::INFINITY, f64::min)),
            Err(RunError::Interrupted) => None,
            Err(e) => {
                tracing::warn!("autotuning: candidate {} failed: {e}", label(b.candidate(k)));
                None
            }
        }
    };
    let mut times = vec![f64::INFINITY; n];
    for (k, slot) in times.iter_mut().enumerate() {
        if !go_on() {
            break;
        }
        if let Some(t) = time(k) {
            *slot = t;
        }
    }
    // The candidates within RETIME of the best are timed once more, in turn: on calls
    // of a millisecond or less, one process's noise (another candidate's cold caches,
    // clock changes) is as large as the difference between vector lengths.
    let first = times.iter().copied().fold(f64::INFINITY, f64::min);
    let close: Vec<usize> = (0..n).filter(|k| times[*k] <= first * RETIME).collect();
    if close.len() > 1 && !over.get() && !user_stop.get() {
        for &k in &close {
            if !go_on() {
                break;
            }
            if let Some(t) = time(k) {
                times[k] = times[k].min(t);
            }
        }
        // Every candidate was timed once; a second round cut short by the budget still
        // chose among timed candidates.
        over.set(false);
    }
    for c in copies {
        gpu.free_copy(c);
    }
    if user_stop.get() {
        return Err(RunError::Interrupted);
    }
    if over.get() {
        // The best of the candidates timed within the budget (the first when none was),
        // for this process only: not recorded, since the others were not timed.
        let best = (0..n)
            .min_by(|x, y| times[*x].total_cmp(&times[*y]))
            .filter(|k| times[*k].is_finite())
            .unwrap_or(0);
        tracing::info!(
            "autotuning `{}`: over its {TUNING_BUDGET} s budget after {:.2} s; using {}",
            b.func,
            t0.elapsed().as_secs_f64(),
            label(b.candidate(best))
        );
        return Ok(best);
    }
    let best = (0..n).min_by(|x, y| times[*x].total_cmp(&times[*y])).unwrap_or(0);
    if !times[best].is_finite() {
        // Timing needs the arguments on the device at once (twice, with copies of device
        // buffers); when that fails, e.g. for data larger than the device, run the
        // default candidate, which may tile (`APPY_DEVICE_BUDGET`). Not cached.
        tracing::warn!("autotuning `{}`: no candidate could be timed; using mvl={}", b.func, b.mvl);
        return Ok(0);
    }
    if printing() {
        for (k, t) in times.iter().enumerate() {
            eprintln!(
                "appy autotune: {} [{}]: {} {:.4} ms",
                b.func,
                bucket(args),
                label(b.candidate(k)),
                t * 1e3
            );
        }
        eprintln!("appy autotune: {} [{}]: chose {}", b.func, bucket(args), label(b.candidate(best)));
    }
    if let Some(d) = &dir {
        record(d, &key, b, &times, best);
    }
    Ok(best)
}

/// A candidate as messages and cache keys name it: `mvl=256`, `tune=K` for the K-th
/// values of the program's `tune(...)` lists, `vector` for seed 002's code generation.
pub fn label(c: &Bundle) -> String {
    let mut s = format!("mvl={}", c.mvl);
    if c.choice != 0 {
        s.push_str(&format!(" tune={}", c.choice));
    }
    if c.vector_code {
        s.push_str(" vector");
    }
    s
}

/// The candidate of `b` recorded in the cache in `dir` under `key`, if any.
pub fn recorded(dir: &std::path::Path, key: &str, b: &Bundle) -> Option<usize> {
    let v = crate::cache::load(dir, key)?;
    let mvl = v.get("mvl")?.as_i64()?;
    let choice = v.get("tune").and_then(|c| c.as_u64()).unwrap_or(0);
    let vector = v.get("vector").and_then(|c| c.as_bool()).unwrap_or(false);
    (0..b.candidates()).find(|k| {
        let c = b.candidate(*k);
        c.mvl == mvl && u64::from(c.choice) == choice && c.vector_code == vector
    })
}

/// Records in the cache in `dir` under `key` that candidate `best` of `b` is the
/// fastest, with every candidate's time (`times`, seconds; not finite: it failed).
pub fn record(dir: &std::path::Path, key: &str, b: &Bundle, times: &[f64], best: usize) {
    let times_ms: Vec<serde_json::Value> = (0..b.candidates())
        .map(|k| {
            let t = times.get(k).copied().unwrap_or(f64::INFINITY);
            let c = b.candidate(k);
            serde_json::json!({"mvl": c.mvl, "tune": c.choice, "vector": c.vector_code, "ms": if t.is_finite() { t * 1e3 } else { -1.0 }})
        })
        .collect();
    let c = b.candidate(best);
    crate::cache::store(
        dir,
        key,
        serde_json::json!({"mvl": c.mvl, "tune": c.choice, "vector": c.vector_code, "candidates": times_ms}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HostArray;
    use appy_ir::types::DType;

    #[test]
    fn buckets_round_up_to_powers_of_two() {
        let a = HostValue::Array(HostArray::zeros(DType::F32, vec![1000, 3]));
        let args = [
            a,
            HostValue::Int(1000, DType::I64, true),
            HostValue::Float(0.5, DType::F64, true),
            HostValue::Int(1, DType::I64, true),
        ];
        assert_eq!(bucket(&args), "[1024x4],1024,f,1");
        let b = HostValue::Array(HostArray::zeros(DType::F32, vec![1024, 4]));
        assert_eq!(bucket(std::slice::from_ref(&b)), "[1024x4]");
        // The memo's hash agrees with the bucket: equal within one, different across.
        assert_eq!(
            bucket_hash(std::slice::from_ref(&b)),
            bucket_hash(&[HostValue::Array(HostArray::zeros(DType::F32, vec![1000, 3]))])
        );
        assert_ne!(
            bucket_hash(std::slice::from_ref(&b)),
            bucket_hash(&[HostValue::Array(HostArray::zeros(DType::F32, vec![1025, 3]))])
        );
        assert_ne!(bucket_hash(&args[1..2]), bucket_hash(&args[2..3]));
        assert_ne!(
            bucket_hash(&[b]),
            bucket_hash(&[HostValue::Array(HostArray::zeros(DType::F32, vec![4096]))])
        );
    }
}
