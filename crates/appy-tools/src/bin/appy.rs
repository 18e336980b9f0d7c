//! `appy`: compile and run an APPy function.
//!
//! ```text
//! appy run kernel.py --func vector_add --arg A=@a.npy --arg B=@b.npy --arg C=@c.npy --arg N=1000 --out out/
//! appy compile kernel.py --func vector_add --arg A=@a.npy ... -o vector_add.bundle.json   # for the GPU
//! appy exec vector_add.bundle.json --arg A=@a.npy ... --out out/                          # needs only the driver
//! ```

#![allow(clippy::result_large_err)]

use appy_ir::diag::Diagnostic;
use appy_runtime::{Device, HostArray, HostValue};
use appy_tools::output::{Input, Output};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "appy",
    version,
    about = "Compile and run annotated Python (APPy) functions on the GPU or the CPU"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compile a jitted function for its arguments' types and run it.
    Run {
        /// The Python source file.
        file: PathBuf,
        /// The @appy.jit function to run.
        #[arg(long)]
        func: String,
        /// `NAME=@file.npy` for arrays, `NAME=3.5` for scalars, `NAME=np.uint8(5)` for NumPy scalars (one per parameter).
        #[arg(long = "arg")]
        args: Vec<String>,
        /// Where to run.
        #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
        device: DeviceArg,
        /// Where to write each array argument's final value and the return value(s).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Maximum vector length (threads per block on the GPU).
        #[arg(long, default_value_t = appy_ir::DEFAULT_MVL)]
        mvl: i64,
        /// Run this many times and report the times (first run included separately).
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Checked mode: every array subscript is checked, and an index out of bounds
        /// is an error naming it (also `APPY_BOUNDS_CHECK=1`).
        #[arg(long)]
        bounds_check: bool,
    },
    /// Compile a jitted function for the GPU into a bundle (host program + PTX).
    #[cfg(feature = "jit")]
    Compile {
        /// The Python source file.
        file: PathBuf,
        /// The @appy.jit function.
        #[arg(long)]
        func: String,
        /// Arguments as for `run` (only their types matter), or use --signature.
        #[arg(long = "arg")]
        args: Vec<String>,
        /// Argument types instead of values: `f32[:],f32[:],int`.
        #[arg(long)]
        signature: Option<String>,
        /// Maximum vector length.
        #[arg(long, default_value_t = appy_ir::DEFAULT_MVL)]
        mvl: i64,
        /// Also compile for every tuning vector length (32 … 4096); `appy exec` then
        /// times them on first use per shape bucket and caches the choice.
        #[arg(long)]
        tune: bool,
        /// Output bundle file.
        #[arg(short = 'o')]
        output: PathBuf,
        /// Checked mode: every array subscript is checked, and an index out of bounds
        /// is an error naming it (also `APPY_BOUNDS_CHECK=1`).
        #[arg(long)]
        bounds_check: bool,
    },
    /// Time a function, after warm-up calls (one on the GPU; on the CPU as many as fit
    /// in 0.2 s, at least one, at most 50): on the GPU with the inputs resident on
    /// the device and CUDA events; on the CPU the wall-clock time of each call on fresh
    /// copies of the inputs (made before the clock starts), which the compiled code
    /// reads and writes in place (the call includes building the argument descriptors,
    /// the OpenMP threads' start and join, and allocating returned arrays). Prints the
    /// median and min time and the effective bandwidth (bytes of all array arguments,
    /// once, over the median time).
    #[cfg(feature = "jit")]
    Bench {
        /// The Python source file.
        file: PathBuf,
        /// The @appy.jit function.
        #[arg(long)]
        func: String,
        /// Arguments as for `run`.
        #[arg(long = "arg")]
        args: Vec<String>,
        /// Where to run.
        #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
        device: DeviceArg,
        /// Timed calls.
        #[arg(long, default_value_t = 20)]
        repeat: usize,
        /// Maximum vector length (`appy.MVL`; threads per block on the GPU).
        #[arg(long, default_value_t = appy_ir::DEFAULT_MVL)]
        mvl: i64,
        /// Compare GPU 0 alone with GPU 0 and the host's cores splitting every launch,
        /// the host taking this share (0 to 1) of each launch's groups: the median time
        /// of whole calls on NumPy arrays (transfers included) and of calls on data
        /// left where the previous call put it (docs/MAPPING.md).
        #[arg(long)]
        host_share: Option<f64>,
    },
    /// Run a compiled bundle on the GPU (no compiler needed).
    Exec {
        /// The bundle (from `appy compile`).
        bundle: PathBuf,
        /// Arguments as for `run`.
        #[arg(long = "arg")]
        args: Vec<String>,
        #[command(flatten)]
        opts: ExecOpts,
    },
}

/// `appy exec`'s options.
#[derive(clap::Args)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct ExecOpts {
    /// Output directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run this many times and report the times.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Also time this many calls on device-resident data (no transfers) and print
    /// `bench: min median max` in milliseconds.
    #[arg(long, default_value_t = 0)]
    bench: usize,
    /// Print `stats: launches=N htod_bytes=N dtoh_bytes=N tiles=N nodes=N steps=N
    /// width=N peer_bytes=N split=N unsplit=N` for the (last) run; nodes, steps and
    /// width are the step schedule's (its nodes, its steps, the most nodes of one
    /// step), the last three the split between GPUs' (bytes copied GPU to GPU,
    /// launches split, launches run whole because their ranges may write the same
    /// elements).
    #[arg(long)]
    stats: bool,
    /// Put the array arguments in device buffers first and pass those (the runtime
    /// then copies nothing; the stats count only the runtime's own copies).
    #[arg(long)]
    resident: bool,
    /// Split every kernel launch between this many GPUs (`all`: every GPU; `0,1`: these
    /// GPUs), each running a contiguous range of its groups on its own copy of the
    /// data, which moves between GPUs directly (default: `APPY_DEVICES`, else 1).
    /// Given, even as 1, the call runs (and `--bench` times) as split calls do.
    #[arg(long)]
    devices: Option<String>,
    /// Each GPU's share of a split launch's groups, e.g. `3,1` (default: equal).
    #[arg(long, value_delimiter = ',')]
    weights: Vec<f64>,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl ExecOpts {
    /// The GPUs to split launches between, from `--devices` or `APPY_DEVICES`; checks
    /// `--weights`.
    fn device_set(&self) -> Result<appy_ir::config::Devices, Diagnostic> {
        if self.weights.iter().any(|w| !w.is_finite() || *w < 0.0) || (!self.weights.is_empty() && self.weights.iter().sum::<f64>() <= 0.0)
        {
            return Err(Diagnostic::bare(
                "--weights: expected non-negative shares, not all zero, e.g. `3,1`",
            ));
        }
        match &self.devices {
            None => appy_ir::config::devices().map_err(Diagnostic::bare),
            Some(d) => appy_ir::config::parse_devices(d).map_err(|e| Diagnostic::bare(format!("--devices {e}"))),
        }
    }
}

/// `--device` ([`Device`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DeviceArg {
    /// The GPU if a driver and a device are present, else the CPU.
    Auto,
    /// The CPU back end.
    Cpu,
    /// The GPU (an error when none is usable).
    Gpu,
}

impl From<DeviceArg> for Device {
    fn from(d: DeviceArg) -> Device {
        match d {
            DeviceArg::Auto => Device::Auto,
            DeviceArg::Cpu => Device::Cpu,
            DeviceArg::Gpu => Device::Gpu,
        }
    }
}

fn main() -> ExitCode {
    appy_tools::fault::install();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(appy_ir::config::log().unwrap_or_default()))
        // `APPY_LOG=debug` also reports how long each pass and pipeline took.
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(d) => {
            eprint!("{}", d.render());
            ExitCode::FAILURE
        }
    }
}

/// Parses `--arg NAME=VALUE` list into values in parameter order.
#[cfg(feature = "jit")]
fn bind_args(params: &Params, raw: &[String]) -> Result<Vec<HostValue>, Diagnostic> {
    bind_args_from(params, raw, &mut vec![])
}

/// A function's parameter names and the source text of their default values.
struct Params {
    names: Vec<String>,
    defaults: Vec<Option<String>>,
}

impl Params {
    /// The parameters of a bundle (no defaults: every argument is given).
    fn of_bundle(names: &[String]) -> Params {
        Params {
            names: names.to_vec(),
            defaults: vec![],
        }
    }

    /// The parameters of `f` in `src`, with their defaults as written.
    #[cfg(feature = "jit")]
    fn of_function(src: &appy_ir::diag::SourceFile, f: &appy_frontend::ast::Function) -> Params {
        Params {
            names: f.params.iter().map(|p| p.name.clone()).collect(),
            defaults: f
                .defaults
                .iter()
                .map(|d| d.as_ref().map(|e| src.text()[e.span.start..e.span.end].to_string()))
                .collect(),
        }
    }
}

/// [`bind_args`], also recording the `.npy` files read in `inputs`. A parameter without
/// `--arg` takes its default value (a number or a bool written in the source).
fn bind_args_from(params: &Params, raw: &[String], inputs: &mut Vec<Input>) -> Result<Vec<HostValue>, Diagnostic> {
    let (params, defaults) = (&params.names, &params.defaults);
    let mut vals: Vec<Option<HostValue>> = vec![None; params.len()];
    for a in raw {
        let (name, v) = a
            .split_once('=')
            .ok_or_else(|| Diagnostic::bare(format!("--arg `{a}`: expected NAME=@file.npy or NAME=value")))?;
        let Some(i) = params.iter().position(|p| p == name) else {
            return Err(Diagnostic::bare(format!(
                "--arg {name}: the function has no parameter `{name}` (parameters: {})",
                params.join(", ")
            )));
        };
        if vals[i].is_some() {
            return Err(Diagnostic::bare(format!("--arg {name} given twice")));
        }
        let hv = if let Some(path) = v.strip_prefix('@') {
            inputs.push(Input {
                path: PathBuf::from(path),
                what: format!("the array of parameter `{name}` (--arg {a})"),
            });
            HostValue::Array(HostArray::read_npy(Path::new(path)).map_err(|e| Diagnostic::bare(e.to_string()))?)
        } else {
            HostValue::parse_scalar(v).map_err(|e| Diagnostic::bare(format!("--arg {name}: {e}")))?
        };
        vals[i] = Some(hv);
    }
    for (k, v) in vals.iter_mut().enumerate() {
        if let (None, Some(Some(text))) = (&v, defaults.get(k)) {
            let p = &params[k];
            *v = Some(HostValue::parse_scalar(text).map_err(|_| {
                Diagnostic::bare(format!(
                    "parameter `{p}` has the default value `{text}`, which the command line cannot pass; give --arg {p}=VALUE"
                ))
            })?);
        }
    }
    let missing: Vec<&str> = params
        .iter()
        .zip(&vals)
        .filter(|(_, v)| v.is_none())
        .map(|(p, _)| p.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Diagnostic::bare(format!("missing --arg for parameter(s): {}", missing.join(", "))));
    }
    Ok(vals.into_iter().map(|v| v.expect("checked")).collect())
}

/// Writes every array argument's final value to `DIR/NAME.npy` and the return values
/// to `DIR/return.npy` (`return_K.npy` for a tuple), all or nothing, never over an
/// input ([`appy_tools::output`]).
fn write_outputs(
    out: &Option<PathBuf>,
    params: &[String],
    args: &[HostValue],
    results: &[HostValue],
    inputs: &[Input],
) -> Result<(), Diagnostic> {
    let Some(dir) = out else { return Ok(()) };
    std::fs::create_dir_all(dir).map_err(|e| Diagnostic::bare(format!("cannot create {}: {e}", dir.display())))?;
    let mut outputs = vec![];
    for (p, a) in params.iter().zip(args) {
        if let HostValue::Array(arr) = a {
            outputs.push(Output {
                path: dir.join(format!("{p}.npy")),
                what: format!("the final value of parameter `{p}`"),
                bytes: arr.to_npy(),
            });
        }
    }
    for (k, r) in results.iter().enumerate() {
        let (name, what) = if results.len() == 1 {
            ("return.npy".to_string(), "the return value".to_string())
        } else {
            (format!("return_{k}.npy"), format!("return value {k}"))
        };
        outputs.push(Output {
            path: dir.join(name),
            what,
            bytes: r.to_array().to_npy(),
        });
    }
    appy_tools::output::write_all(&outputs, inputs).map_err(Diagnostic::bare)
}

fn report(times: &[f64]) {
    if times.len() > 1 {
        let mut rest: Vec<f64> = times[1..].to_vec();
        rest.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        eprintln!(
            "appy: {} runs: first {:.3} ms, then min {:.3} ms, median {:.3} ms",
            times.len(),
            times[0] * 1e3,
            rest[0] * 1e3,
            rest[rest.len() / 2] * 1e3
        );
    }
}

fn run(cli: Cli) -> Result<(), Diagnostic> {
    match cli.cmd {
        Cmd::Run {
            file,
            func,
            args,
            device,
            out,
            mvl,
            repeat,
            bounds_check,
        } => run_source(&file, &func, &args, device.into(), &out, mvl, repeat, bounds_check),
        #[cfg(feature = "jit")]
        Cmd::Compile {
            file,
            func,
            args,
            signature,
            mvl,
            tune,
            output,
            bounds_check,
        } => {
            let src = appy_ir::diag::SourceFile::load(&file)?;
            let compiler = appy_compiler::Compiler::new();
            let program = compiler.parse(&src, &func)?;
            let params = Params::of_function(&src, &program.function);
            let mut inputs = vec![Input {
                path: file.clone(),
                what: "the source".into(),
            }];
            let sig = match signature {
                Some(s) => appy_ir::types::parse_signature(&s).map_err(|e| Diagnostic::bare(format!("--signature: {e}")))?,
                None => bind_args_from(&params, &args, &mut inputs)?.iter().map(|a| a.arg_type()).collect(),
            };
            let t0 = std::time::Instant::now();
            let mvls: &[i64] = if tune { &appy_ir::TUNE_MVLS } else { &[] };
            let bundle = compiler.compile_gpu_tuned(
                &src,
                &func,
                &sig,
                &appy_compiler::Options {
                    mvl,
                    bounds_check: bounds_check || appy_ir::config::bounds_check(),
                    vector_code: appy_ir::config::gpu_vector(),
                    ..Default::default()
                },
                mvls,
            )?;
            for w in compiler.take_warnings() {
                eprint!("{}", w.render());
            }
            eprintln!(
                "appy: compiled {func} ({} kernel(s)) in {:.1} ms",
                bundle.kernels.len(),
                t0.elapsed().as_secs_f64() * 1e3
            );
            let out = Output {
                path: output,
                what: "the bundle".into(),
                bytes: bundle.to_json().into_bytes(),
            };
            appy_tools::output::write_all(&[out], &inputs).map_err(Diagnostic::bare)
        }
        #[cfg(feature = "jit")]
        Cmd::Bench {
            file,
            func,
            args,
            device: _,
            repeat,
            mvl,
            host_share: Some(share),
        } => bench_host_share(&file, &func, &args, repeat, mvl, share),
        #[cfg(feature = "jit")]
        Cmd::Bench {
            file,
            func,
            args,
            device,
            repeat,
            mvl,
            host_share: None,
        } => bench_source(&file, &func, &args, device.into(), repeat, mvl),
        Cmd::Exec { bundle, args, opts } => exec_bundle(&bundle, &args, &opts),
    }
}

#[cfg(feature = "cuda")]
fn exec_bundle(path: &Path, raw: &[String], o: &ExecOpts) -> Result<(), Diagnostic> {
    let (out, repeat, bench, stats, resident) = (&o.out, o.repeat, o.bench, o.stats, o.resident);
    let devices = o.device_set()?;
    let text = std::fs::read_to_string(path).map_err(|e| Diagnostic::bare(format!("cannot read {}: {e}", path.display())))?;
    let b = appy_ir::bundle::Bundle::from_json(&text).map_err(Diagnostic::bare)?;
    if !devices.one() || o.devices.is_some() {
        return exec_split(path, &b, raw, o, &devices);
    }
    let gpu = appy_runtime::gpu::Gpu::open().map_err(Diagnostic::bare)?;
    let all = appy_runtime::gpu::Candidates::new(&b);
    let mut inputs = vec![Input {
        path: path.to_path_buf(),
        what: "the bundle".into(),
    }];
    let orig = bind_args_from(&Params::of_bundle(&b.params), raw, &mut inputs)?;
    // Autotuning (bundles compiled with --tune): pick the candidate for these shapes.
    let k = appy_runtime::tune::choose(&gpu, &b, &all, &orig).map_err(Diagnostic::bare)?;
    let loaded = all.get(&gpu, &b, k).map_err(Diagnostic::bare)?;
    let b = b.candidate(k).clone();
    let _running = appy_tools::fault::Running::new(&b.func);
    let mut timing = appy_runtime::gpu::Timing::default();
    let mut times = vec![];
    let mut last = (orig.clone(), vec![]);
    for _ in 0..repeat.max(1) {
        let mut args = orig.clone();
        let t0 = std::time::Instant::now();
        if resident {
            let (res, t) = run_resident(&gpu, &b, loaded, &mut args)?;
            times.push(t0.elapsed().as_secs_f64());
            last = (args, res);
            timing = t;
            continue;
        }
        let (res, t) = gpu.run(&b, loaded, &mut args).map_err(program_error)?;
        for w in appy_runtime::status::take_warnings() {
            eprintln!("{w}");
        }
        times.push(t0.elapsed().as_secs_f64());
        last = (args, res);
        timing = t;
    }
    if stats {
        print_stats(&b, &timing);
    }
    report(&times);
    write_outputs(out, &b.params, &last.0, &last.1, &inputs)?;
    if bench > 0 {
        let mut t = gpu.bench(&b, loaded, &orig, bench + 1).map_err(Diagnostic::bare)?;
        t.remove(0);
        t.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        println!("bench: {:.6} {:.6} {:.6}", t[0] * 1e3, t[t.len() / 2] * 1e3, t[t.len() - 1] * 1e3);
    }
    Ok(())
}

/// `stats: ...` of `appy exec --stats` for a call's timing.
#[cfg(feature = "cuda")]
fn print_stats(b: &appy_ir::bundle::Bundle, timing: &appy_runtime::gpu::Timing) {
    // The step schedule of the function (`appy-opt --emit=schedule`): how many of its
    // nodes could run at once.
    let sched = appy_ir::steps::of_module(&b.host).into_iter().find(|s| s.func == b.func);
    let (nodes, steps, width) = sched.map(|s| (s.graph.node_count(), s.steps.len(), s.width())).unwrap_or_default();
    println!(
        "stats: launches={} htod_bytes={} dtoh_bytes={} tiles={} nodes={nodes} steps={steps} width={width} peer_bytes={} split={} unsplit={}",
        timing.launches, timing.htod_bytes, timing.dtoh_bytes, timing.tiles, timing.peer_bytes, timing.split.0, timing.split.1
    );
}

/// `appy exec` with every launch split between several GPUs (`--devices`).
#[cfg(feature = "cuda")]
fn exec_split(
    path: &Path,
    b: &appy_ir::bundle::Bundle,
    raw: &[String],
    o: &ExecOpts,
    devices: &appy_ir::config::Devices,
) -> Result<(), Diagnostic> {
    use appy_runtime::gpu::{Candidates, Gpu};
    if o.resident {
        return Err(Diagnostic::bare(
            "--resident runs on one GPU (a call on device arrays is not split); leave out --devices or --resident",
        ));
    }
    let gpus = Gpu::open_many(devices).map_err(Diagnostic::bare)?;
    if let appy_ir::config::Devices::Count(n) = devices
        && *n > gpus.len()
    {
        tracing::warn!("{n} GPUs asked for, {} present: using those", gpus.len());
    }
    if !o.weights.is_empty() && o.weights.len() != gpus.len() {
        return Err(Diagnostic::bare(format!(
            "--weights: {} shares for {} GPUs",
            o.weights.len(),
            gpus.len()
        )));
    }
    let mut inputs = vec![Input {
        path: path.to_path_buf(),
        what: "the bundle".into(),
    }];
    let orig = bind_args_from(&Params::of_bundle(&b.params), raw, &mut inputs)?;
    // The tuning decision is GPU 0's for the whole launch (the split does not retune).
    let cands: Vec<Candidates> = gpus.iter().map(|_| Candidates::new(b)).collect();
    let k = appy_runtime::tune::choose(&gpus[0], b, &cands[0], &orig).map_err(Diagnostic::bare)?;
    let loaded = gpus
        .iter()
        .zip(&cands)
        .map(|(g, c)| c.get(g, b, k))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Diagnostic::bare)?;
    let b = b.candidate(k).clone();
    let _running = appy_tools::fault::Running::new(&b.func);
    let (mut times, mut last, mut timing) = (vec![], (orig.clone(), vec![]), Default::default());
    for _ in 0..o.repeat.max(1) {
        let mut args = orig.clone();
        let t0 = std::time::Instant::now();
        let (res, t) = Gpu::run_split(&gpus, &loaded, &o.weights, &b, &mut args, &Default::default()).map_err(program_error)?;
        for w in appy_runtime::status::take_warnings() {
            eprintln!("{w}");
        }
        times.push(t0.elapsed().as_secs_f64());
        last = (args, res);
        timing = t;
    }
    if o.stats {
        print_stats(&b, &timing);
    }
    report(&times);
    write_outputs(&o.out, &b.params, &last.0, &last.1, &inputs)?;
    if o.bench > 0 {
        let mut t = Gpu::bench_split(&gpus, &loaded, &o.weights, &b, &orig, o.bench + 1).map_err(Diagnostic::bare)?;
        t.remove(0);
        t.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        println!(
            "bench: {:.6} {:.6} {:.6} on {} GPUs",
            t[0] * 1e3,
            t[t.len() / 2] * 1e3,
            t[t.len() - 1] * 1e3,
            gpus.len()
        );
    }
    Ok(())
}

/// Runs with the array arguments already in device buffers (`--resident`).
#[cfg(feature = "cuda")]
fn run_resident(
    gpu: &appy_runtime::gpu::Gpu,
    b: &appy_ir::bundle::Bundle,
    loaded: &appy_runtime::gpu::Loaded,
    args: &mut [HostValue],
) -> Result<(Vec<HostValue>, appy_runtime::gpu::Timing), Diagnostic> {
    use cudarc::driver::result;
    let mut dev_args = vec![];
    let mut bufs = vec![];
    for a in args.iter() {
        if let HostValue::Array(arr) = a {
            let ptr = unsafe { result::malloc_sync(arr.data.len().max(1)) }.map_err(|e| Diagnostic::bare(format!("{e:?}")))?;
            if !arr.data.is_empty() {
                unsafe { result::memcpy_htod_sync(ptr, &arr.data) }.map_err(|e| Diagnostic::bare(format!("{e:?}")))?;
            }
            bufs.push(ptr);
            dev_args.push(HostValue::Device {
                ptr,
                dtype: arr.dtype,
                shape: arr.shape.clone(),
            });
        } else {
            dev_args.push(a.clone());
        }
    }
    let r = gpu.run(b, loaded, &mut dev_args).map_err(program_error)?;
    let mut k = 0;
    for a in args.iter_mut() {
        if let HostValue::Array(arr) = a {
            if !arr.data.is_empty() {
                unsafe { result::memcpy_dtoh_sync(&mut arr.data, bufs[k]) }.map_err(|e| Diagnostic::bare(format!("{e:?}")))?;
            }
            unsafe {
                let _ = result::free_sync(bufs[k]);
            }
            k += 1;
        }
    }
    Ok(r)
}

#[cfg(not(feature = "cuda"))]
fn exec_bundle(_: &Path, _: &[String], _: &ExecOpts) -> Result<(), Diagnostic> {
    Err(Diagnostic::bare("this appy was built without the GPU runner (feature `cuda`)"))
}

#[cfg(feature = "jit")]
#[allow(clippy::too_many_arguments)]
fn run_source(
    file: &Path,
    func: &str,
    raw: &[String],
    device: Device,
    out: &Option<PathBuf>,
    mvl: i64,
    repeat: usize,
    bounds_check: bool,
) -> Result<(), Diagnostic> {
    let src = appy_ir::diag::SourceFile::load(file)?;
    let text = src.text().to_string();
    let program = appy_frontend::parse_function(&src, func)?;
    let params = Params::of_function(&src, &program.function);
    let mut inputs = vec![Input {
        path: file.to_path_buf(),
        what: "the source".into(),
    }];
    let orig = bind_args_from(&params, raw, &mut inputs)?;
    let opts = appy_compiler::Options {
        mvl,
        bounds_check: bounds_check || appy_ir::config::bounds_check(),
        vector_code: appy_ir::config::gpu_vector(),
        ..Default::default()
    };
    let mut jit = appy_runtime::jit::Jit::from_source(&file.display().to_string(), &text, device).with_options(opts);
    if device == Device::Gpu && !jit.on_gpu() {
        return Err(Diagnostic::bare("--device gpu: no usable GPU (no CUDA driver or device found)"));
    }
    // Compile first, so that a fault from here on is the compiled code's.
    jit.prepare(func, &orig)?;
    let _running = appy_tools::fault::Running::new(func);
    let mut times = vec![];
    let mut last = (orig.clone(), vec![]);
    for _ in 0..repeat.max(1) {
        let mut args = orig.clone();
        let t0 = std::time::Instant::now();
        let res = jit.call(func, &mut args);
        for w in jit.take_warnings() {
            eprint!("{}", w.render());
        }
        for w in appy_runtime::status::take_warnings() {
            eprintln!("{w}");
        }
        let res = res?;
        times.push(t0.elapsed().as_secs_f64());
        last = (args, res);
    }
    tracing::info!("ran on the {}", if jit.on_gpu() { "GPU" } else { "CPU" });
    report(&times);
    write_outputs(out, &params.names, &last.0, &last.1, &inputs)
}

/// `appy bench`.
#[cfg(feature = "jit")]
fn bench_source(file: &Path, func: &str, raw: &[String], device: Device, repeat: usize, mvl: i64) -> Result<(), Diagnostic> {
    let src = appy_ir::diag::SourceFile::load(file)?;
    let text = src.text().to_string();
    let program = appy_frontend::parse_function(&src, func)?;
    let params = Params::of_function(&src, &program.function);
    let args = bind_args(&params, raw)?;
    let opts = appy_compiler::Options {
        mvl,
        vector_code: appy_ir::config::gpu_vector(),
        ..Default::default()
    };
    let mut jit = appy_runtime::jit::Jit::from_source(&file.display().to_string(), &text, device).with_options(opts);
    if device == Device::Gpu && !jit.on_gpu() {
        return Err(Diagnostic::bare("--device gpu: no usable GPU (no CUDA driver or device found)"));
    }
    jit.prepare(func, &args)?;
    let _running = appy_tools::fault::Running::new(func);
    let mut t = jit.bench(func, &args, repeat.max(1))?;
    t.sort_by(|a, b| a.total_cmp(b));
    let med = t[t.len() / 2];
    let bytes: usize = args
        .iter()
        .map(|a| match a {
            HostValue::Array(x) => x.data.len(),
            _ => 0,
        })
        .sum();
    println!(
        "{func} on the {}: median {:.4} ms, min {:.4} ms over {} calls; {:.1} GB/s effective ({bytes} bytes of array arguments)",
        if jit.on_gpu() { "GPU" } else { "CPU" },
        med * 1e3,
        t[0] * 1e3,
        t.len(),
        bytes as f64 / med / 1e9
    );
    Ok(())
}

/// `appy bench --host-share`: GPU 0 alone against GPU 0 and the host's cores.
#[cfg(all(feature = "jit", feature = "cuda"))]
fn bench_host_share(file: &Path, func: &str, raw: &[String], repeat: usize, mvl: i64, share: f64) -> Result<(), Diagnostic> {
    use appy_runtime::exec::{run_split, time_split};
    use appy_runtime::host_device::{HostDevice, HostKernels};
    use appy_runtime::processors::{Processor, ProcessorKernel};
    if !(0.0..1.0).contains(&share) {
        return Err(Diagnostic::bare(format!(
            "--host-share {share}: expected a share from 0 up to (not including) 1"
        )));
    }
    let src = appy_ir::diag::SourceFile::load(file)?;
    let program = appy_frontend::parse_function(&src, func)?;
    let params = Params::of_function(&src, &program.function);
    let args = bind_args(&params, raw)?;
    let sig: Vec<_> = args.iter().map(|a| a.arg_type()).collect();
    let opts = appy_compiler::Options { mvl, ..Default::default() };
    let compiler = appy_compiler::Compiler::new();
    let gpu_bundle = compiler.compile_gpu(&src, func, &sig, &opts)?;
    let (host_bundle, host_kernels) = HostKernels::compile(&compiler, &src, func, &sig, &opts)?;
    if host_bundle.program != gpu_bundle.program {
        return Err(Diagnostic::bare(
            "the host's and the GPU's builds of the function have different host programs; they cannot split one call",
        ));
    }
    let gpu = appy_runtime::gpu::Gpu::open().map_err(Diagnostic::bare)?;
    let loaded = gpu.load(&gpu_bundle).map_err(Diagnostic::bare)?;
    let gpu_kernels: Vec<ProcessorKernel> = loaded.functions().iter().cloned().map(ProcessorKernel::Gpu).collect();
    let cpu_kernels: Vec<ProcessorKernel> = host_kernels.kernels().iter().copied().map(ProcessorKernel::Host).collect();
    let procs = [Processor::Gpu(gpu), Processor::Host(HostDevice::new(1))];
    let _running = appy_tools::fault::Running::new(func);
    let median = |mut t: Vec<f64>| {
        t.sort_by(|a, b| a.total_cmp(b));
        t[t.len() / 2] * 1e3
    };
    let mut first = None;
    for (what, devs, weights) in [
        ("GPU alone", vec![(&procs[0], &gpu_kernels[..])], vec![1.0]),
        (
            "GPU + host",
            vec![(&procs[0], &gpu_kernels[..]), (&procs[1], &cpu_kernels[..])],
            vec![1.0 - share, share],
        ),
    ] {
        let mut whole = vec![];
        let mut out = None;
        for _ in 0..repeat.max(1) + 1 {
            let mut a = args.clone();
            let t0 = std::time::Instant::now();
            let (r, _) =
                run_split(&devs, &weights, &gpu_bundle, &mut a, &Default::default(), &Default::default()).map_err(program_error)?;
            whole.push(t0.elapsed().as_secs_f64());
            out = Some((a, r));
        }
        whole.remove(0);
        // The same results either way (up to reassociation of reductions).
        match (&first, out) {
            (None, o) => first = o,
            (Some((a0, r0)), Some((a1, r1))) if (a0, r0) != (&a1, &r1) => {
                println!("{func}: {what}: results differ from the GPU's alone (reductions reassociate)")
            }
            _ => {}
        }
        let mut resident = time_split(&devs, &weights, &gpu_bundle, &args, repeat.max(1) + 1).map_err(Diagnostic::bare)?;
        resident.remove(0);
        println!(
            "{func} {what} (host share {}): whole call {:.4} ms, resident {:.4} ms",
            if devs.len() > 1 { share } else { 0.0 },
            median(whole),
            median(resident)
        );
    }
    Ok(())
}

#[cfg(all(feature = "jit", not(feature = "cuda")))]
fn bench_host_share(_: &Path, _: &str, _: &[String], _: usize, _: i64, _: f64) -> Result<(), Diagnostic> {
    Err(Diagnostic::bare(
        "--host-share needs the compiler and the GPU runner (features `jit` and `cuda`)",
    ))
}

/// A runtime error; the program's own (`FILE:LINE:COL: error: ...` from checked mode)
/// is located in its source file when that file is readable.
#[cfg(feature = "cuda")]
fn program_error(e: appy_runtime::RunError) -> Diagnostic {
    if let appy_runtime::RunError::Checked(e) = e {
        let path = e.split(':').next().unwrap_or_default();
        if let Ok(f) = appy_ir::diag::SourceFile::read(Path::new(path))
            && let Some(d) = Diagnostic::from_runtime_line(&f, &e)
        {
            return d;
        }
        if let Some((loc, msg)) = e.split_once(": error: ") {
            return Diagnostic::bare(msg.to_string()).with_note(format!("at {loc}"));
        }
        return Diagnostic::bare(e);
    }
    Diagnostic::bare(e.to_string())
}

#[cfg(not(feature = "jit"))]
#[allow(clippy::too_many_arguments)]
fn run_source(_: &Path, _: &str, _: &[String], _: Device, _: &Option<PathBuf>, _: i64, _: usize, _: bool) -> Result<(), Diagnostic> {
    Err(Diagnostic::bare(
        "this appy was built without the compiler (feature `jit`); compile elsewhere with `appy compile` and use `appy exec`",
    ))
}
