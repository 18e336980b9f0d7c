//! Embedding appy in a Rust program: compile an APPy source once, call its function on
//! `ndarray` arrays (on the GPU when a driver and a device are present, else on the CPU
//! back end), and compare with the same computation as a plain Rust loop.
//!
//! On the GPU, `Jit::call_views` copies host arrays to the device and back at every call;
//! a program that keeps its data on the GPU passes `HostValue::Device` arrays instead.
//!
//! ```sh
//! cargo run --release --example embed            # 1000 x 777
//! cargo run --release --example embed -- 4000 999
//! APPY_DEVICE=cpu cargo run --release --example embed
//! ```

use appy::ndarray::Array2;
use appy::{Jit, ViewArg};
use std::time::Instant;

/// A row-wise softmax, as APPy's users write it.
const SOURCE: &str = r#"
import numpy as np
import appy

@appy.jit
def softmax(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = np.maximum(m, a[i, j])
        s = 0.0
        #pragma simd
        for j in range(N):
            s += np.exp(a[i, j] - m)
        #pragma simd
        for j in range(N):
            b[i, j] = np.exp(a[i, j] - m) / s
"#;

/// The same softmax as a plain Rust loop (one thread, in float64 for reference).
fn softmax_rust(a: &Array2<f32>) -> Array2<f32> {
    let mut b = Array2::<f32>::zeros(a.raw_dim());
    for (row, mut out) in a.rows().into_iter().zip(b.rows_mut()) {
        let m = row.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let s: f64 = row.iter().map(|&x| ((x - m) as f64).exp()).sum();
        for (o, &x) in out.iter_mut().zip(row.iter()) {
            *o = (((x - m) as f64).exp() / s) as f32;
        }
    }
    b
}

/// A deterministic pseudo-random matrix with entries in [-4, 4).
fn random(m: usize, n: usize) -> Array2<f32> {
    let mut state = 0x9e3779b97f4a7c15u64;
    Array2::from_shape_simple_fn((m, n), || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0
    })
}

/// One call of the jitted softmax: `b` gets the softmax of `a`'s rows.
fn call(jit: &mut Jit, a: &mut Array2<f32>, b: &mut Array2<f32>) -> Result<(), Box<dyn std::error::Error>> {
    let (m, n) = a.dim();
    jit.call_views(
        "softmax",
        &mut [
            a.view_mut().into(),
            b.view_mut().into(),
            ViewArg::int(m as i64),
            ViewArg::int(n as i64),
        ],
    )?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut dims = std::env::args().skip(1).map(|s| {
        s.parse::<usize>()
            .map_err(|e| format!("`{s}` is not a matrix size: {e} (usage: embed [ROWS [COLUMNS]])"))
    });
    let m = dims.next().transpose()?.unwrap_or(1000);
    let n = dims.next().transpose()?.unwrap_or(777);
    let device = appy::default_device()?;

    let a = random(m, n);
    let mut b = Array2::<f32>::zeros((m, n));
    let mut jit = Jit::from_source("softmax.py", SOURCE, device);
    let mut a_in = a.clone();
    let t = Instant::now();
    call(&mut jit, &mut a_in, &mut b)?;
    let first = t.elapsed();
    let t = Instant::now();
    let reps = 10;
    for _ in 0..reps {
        call(&mut jit, &mut a_in, &mut b)?;
    }
    let per_call = t.elapsed() / reps;

    let t = Instant::now();
    let expect = softmax_rust(&a);
    let rust = t.elapsed();

    let err = b.iter().zip(expect.iter()).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    let on = if jit.on_gpu() { "the GPU" } else { "the CPU" };
    println!("appy {}: softmax of a {m}x{n} float32 matrix on {on}", appy::VERSION);
    println!("  appy, first call (compile + run): {:8.2} ms", first.as_secs_f64() * 1e3);
    let moved = if jit.on_gpu() {
        " (the arrays moved to and from the GPU each call)"
    } else {
        ""
    };
    println!("  appy, later calls:                {:8.3} ms{moved}", per_call.as_secs_f64() * 1e3);
    println!("  plain Rust loop, one thread:      {:8.3} ms", rust.as_secs_f64() * 1e3);
    println!("  rows 0..3, column 0: appy {:?}", b.column(0).iter().take(3).collect::<Vec<_>>());
    println!(
        "                       Rust {:?}",
        expect.column(0).iter().take(3).collect::<Vec<_>>()
    );
    println!("  max |appy - Rust| = {err:.3e}");
    if err.is_nan() || err > 1e-6 {
        return Err(format!("appy's result differs from the Rust loop's by {err}").into());
    }
    Ok(())
}
