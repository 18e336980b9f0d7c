//! The host-program executor: runs a bundle's host program
//! ([`appy_ir::host::HostProgram`], typed ops over dense value slots) against a
//! [`Device`] — scalar code ([`scalar`]), host loops and conditionals, allocations,
//! element reads and writes (`interp`), kernel launches (`launch`) and library calls
//! (`library`), with the residency of array arguments tracked per box
//! (`residency`).
//!
//! It is generic over the device: [`crate::gpu::Gpu`] runs it on an NVIDIA GPU, and the
//! tests run it against a device in host memory.

mod interp;
mod launch;
mod library;
mod residency;
pub mod scalar;
mod split;
#[cfg(test)]
mod tests;

use crate::array::{AlignedBytes, HostArray, HostValue};
use crate::device::Device;
use crate::error::{RunError, RunResult};
use appy_ir::bundle::Bundle;
use appy_ir::host::HostProgram;
use appy_ir::types::{ArgType, DType};
use residency::Mem;
use std::time::Instant;

/// Options of a call.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Leave returned arrays in device memory ([`HostValue::Device`]) instead of
    /// copying them to the host. A returned array that is not one of the caller's
    /// device arguments is newly allocated: the caller owns it and frees it, e.g. with
    /// [`crate::gpu::Gpu::adopt`].
    pub results_on_device: bool,
    /// Asked about every 20 ms while the host function runs a loop: returning `true`
    /// stops the call with [`RunError::Interrupted`] (e.g. Ctrl-C in an embedding
    /// interpreter). Kernels already launched finish first.
    pub interrupt: Option<&'a dyn Fn() -> bool>,
    /// Return once the work is queued, without waiting for it, when nothing of the call
    /// comes back to the host: every array argument is a device array, results stay on
    /// the device, and no kernel reports through the status buffer. The work is on the
    /// CUDA default (legacy) stream, which orders it before later work on the default
    /// stream and before every copy to the host, as CuPy's and torch's calls are.
    pub return_early: bool,
}

/// Timing of one call.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Seconds spent in kernels (launch to completion, synchronised per launch when
    /// `APPY_SYNC_LAUNCHES` is set; otherwise the whole call).
    pub kernel_s: f64,
    /// Number of launches (kernels and library calls).
    pub launches: usize,
    /// Bytes copied host → device.
    pub htod_bytes: usize,
    /// Bytes copied device → host.
    pub dtoh_bytes: usize,
    /// Tiles run by launches split to fit the memory budget.
    pub tiles: usize,
    /// Bytes copied from one device to another (launches split between devices).
    pub peer_bytes: usize,
    /// Launches split between devices, and launches that could not be split (their
    /// ranges of groups may write the same elements) and ran on one device.
    pub split: (usize, usize),
    /// For each result, the index of the argument it is, when the function returned one
    /// of its array arguments (`return a`): the caller can hand back that object
    /// rather than the copy among the results.
    pub returned_args: Vec<Option<usize>>,
}

/// Settings of the executor that come from the environment.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// The device memory budget for the arguments in bytes (`APPY_DEVICE_BUDGET`); by
    /// default 90 % of the device's free memory. Beyond it, launches run in tiles.
    pub budget: Option<usize>,
    /// Synchronise after every launch and time it (`APPY_SYNC_LAUNCHES`).
    pub sync_launches: bool,
    /// Move only the elements strided accesses touch (`APPY_STRIDED=1`; off: the
    /// spanned boxes). See `docs/KERNEL_IR.md`, "Strided transfers".
    pub strided: bool,
}

impl Limits {
    /// The settings from `APPY_DEVICE_BUDGET`, `APPY_SYNC_LAUNCHES` and `APPY_STRIDED`, read once per
    /// process (a call does not pay for reading the environment).
    pub fn from_env() -> Limits {
        static LIMITS: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();
        LIMITS
            .get_or_init(|| Limits {
                budget: appy_ir::config::device_budget(),
                sync_launches: appy_ir::config::sync_launches(),
                strided: appy_ir::config::strided_transfers(),
            })
            .clone()
    }
}

/// A value of host code: an integer (also `index`, `i1`), a float, or a memref; a
/// slot not yet defined is `Undef`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum HV {
    I(i64),
    F(f64),
    Mem(usize),
    Undef,
}

/// One call's state: the device, the bundle, the memrefs and the values of host code.
pub struct Executor<'a, D: Device> {
    dev: &'a D,
    /// The bundle's kernels loaded on `dev`, in the order of [`Bundle::kernels`].
    kernels: &'a [D::Kernel],
    /// The bundle's host program.
    p: &'a HostProgram,
    /// Arguments are not copied to the device whole: every launch runs in tiles of
    /// blocks whose data fits the memory budget (seed 002 §5.4).
    tiled: bool,
    budget: usize,
    limits: Limits,
    /// The value of each slot of the host program.
    env: Vec<HV>,
    mems: Vec<Mem>,
    /// Memref ids of the array arguments, in order.
    arg_mems: Vec<usize>,
    timing: Timing,
    interrupt: Option<&'a dyn Fn() -> bool>,
    last_check: Instant,
    /// The status buffer's memory, when the function takes one ([`appy_ir::status`]),
    /// and its sites.
    status: Option<usize>,
    sites: Option<&'a appy_ir::status::Status>,
    /// Reused buffers: a launch's argument values, its parameter cells.
    scratch: Vec<HV>,
    cells: Vec<u64>,
    /// Access analyses of launches, by kernel and launch arguments (a host loop
    /// launches the same kernels with the same arguments at every step).
    analyses: launch::Analyses,
    /// In a call split between devices ([`run_split`]): devices 1, 2, ... with their
    /// kernels (device 0 is `dev`), and each device's share of a launch's groups.
    peers: Vec<(&'a D, &'a [D::Kernel])>,
    weights: Vec<f64>,
}

impl<'a, D: Device> Executor<'a, D> {
    /// An executor for one call of `b` on `dev`, with `kernels` loaded there.
    pub fn new(dev: &'a D, kernels: &'a [D::Kernel], b: &'a Bundle, tiled: bool, limits: &Limits) -> RunResult<Self> {
        let p = &b.program;
        if p.kernels.len() != b.kernels.len() {
            return Err(RunError::Bundle("the host program's kernels are not the bundle's".into()));
        }
        Ok(Executor {
            dev,
            kernels,
            p,
            tiled,
            budget: usize::MAX,
            limits: limits.clone(),
            env: vec![HV::Undef; p.slots as usize],
            mems: vec![],
            arg_mems: vec![],
            timing: Timing::default(),
            interrupt: None,
            last_check: Instant::now(),
            status: None,
            sites: b.status.as_ref(),
            scratch: vec![],
            cells: vec![],
            analyses: Default::default(),
            peers: vec![],
            weights: vec![],
        })
    }

    /// Splits every launch of the call between `dev` and `peers` (devices 1, 2, ...,
    /// with their kernels), in proportion to `weights` (one per device, `dev`'s first;
    /// equal shares when empty). Must come before [`Executor::bind_args`].
    pub fn with_peers(mut self, peers: Vec<(&'a D, &'a [D::Kernel])>, weights: &[f64]) -> Self {
        self.weights = if weights.len() == 1 + peers.len() {
            weights.to_vec()
        } else {
            vec![1.0; 1 + peers.len()]
        };
        self.peers = peers;
        self
    }

    /// Binds the host function's parameters to the call's arguments (host arrays get
    /// device memory, moved there when kernels need them), each host array through a
    /// copy of its own: the body may then run several times on the same contents
    /// (benchmarks), and the arguments never change.
    pub fn bind_args(&mut self, args: &[HostValue]) -> RunResult<()> {
        self.bind(args, vec![])
    }

    /// [`Executor::bind_args`] for one call: each host array is used in place (its
    /// memory lent to the executor until the call downloads into it), so no copy of it
    /// is made on the host. Until then the arguments must not be read or written but
    /// through the executor.
    fn bind_args_in_place(&mut self, args: &mut [HostValue]) -> RunResult<()> {
        let lent = args
            .iter_mut()
            .filter_map(|a| match a {
                // SAFETY: the array outlives the executor's use of it (the call
                // downloads into it before it returns), and nothing else reaches it
                // until then.
                HostValue::Array(arr) => Some(unsafe { AlignedBytes::borrowed(arr.data.as_mut_ptr(), arr.data.len()) }),
                _ => None,
            })
            .collect();
        self.bind(args, lent)
    }

    /// Binds the parameters; host arrays use the buffers `lent` in order, or copies
    /// where it has none.
    fn bind(&mut self, args: &[HostValue], lent: Vec<AlignedBytes>) -> RunResult<()> {
        let mut lent = lent.into_iter();
        for (v, a) in self.p.params.iter().zip(args) {
            let hv = match a {
                HostValue::Array(arr) => {
                    let host = lent.next().unwrap_or_else(|| arr.data.clone());
                    let id = self.upload(arr.dtype, arr.shape.clone(), host)?;
                    self.arg_mems.push(id);
                    HV::Mem(id)
                }
                HostValue::Int(i, d, _) => HV::I(scalar::wrap(*i, d.bits() as u8)),
                HostValue::Float(f, _, _) => HV::F(*f),
                HostValue::Bool(x) => HV::I(*x as i64),
                HostValue::Device { ptr, dtype, shape } => HV::Mem(self.borrow(*ptr, *dtype, shape)),
            };
            self.env[*v as usize] = hv;
        }
        // The status buffer ([`appy_ir::status`]): a trailing parameter, zeroed; in
        // host memory alone when no kernel takes it (host code's checks, such as a
        // negative dimension, write it): no device buffer, nothing to copy back.
        if let Some(&v) = self.p.params.get(args.len()) {
            let n = appy_ir::status::STATUS_LEN;
            let id = if self.p.body.launch_may_use(v) {
                self.upload(DType::I64, vec![n], AlignedBytes::zeroed(8 * n))?
            } else {
                self.mems.push(residency::Mem::slot(DType::I64, vec![n], n));
                self.mems.len() - 1
            };
            self.status = Some(id);
            self.env[v as usize] = HV::Mem(id);
        }
        Ok(())
    }

    /// After a synchronised call: the status buffer's error (an index out of bounds in
    /// checked mode, a negative dimension), else its warnings queued.
    /// Whether the call's status buffer is in device memory (a kernel reports through
    /// it), so reading it waits for the kernels.
    fn status_on_device(&self) -> bool {
        self.status.is_some_and(|id| self.mems[id].host.is_none())
    }

    fn check_status(&mut self) -> RunResult<()> {
        let (Some(id), Some(st)) = (self.status, self.sites) else {
            return Ok(());
        };
        let words: Vec<i64> = if let Some(h) = &self.mems[id].host {
            h.iter().map(|w| *w as i64).collect()
        } else {
            let mut bytes = vec![0u8; 8 * appy_ir::status::STATUS_LEN];
            self.download(id, &mut bytes)?;
            bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        };
        crate::status::queue(st.decode(&words).map_err(RunError::Checked)?);
        Ok(())
    }

    /// Runs the host function's body once; returns the values it returns.
    pub(crate) fn run_body(&mut self) -> RunResult<Vec<HV>> {
        let p = self.p;
        let yields = self.block(&p.body)?;
        yields.iter().map(|s| self.get(*s)).collect()
    }

    /// What the call did so far.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Asks `stop` between host loop iterations from now on (see
    /// [`RunOptions::interrupt`]).
    #[cfg(feature = "cuda")]
    pub(crate) fn set_interrupt(&mut self, stop: Option<&'a dyn Fn() -> bool>) {
        self.interrupt = stop;
    }

    /// Checks for an interruption (at most every 20 ms).
    fn check_interrupt(&mut self) -> RunResult<()> {
        if let Some(stop) = self.interrupt
            && self.last_check.elapsed().as_millis() >= 20
        {
            self.last_check = Instant::now();
            if stop() {
                return Err(RunError::Interrupted);
            }
        }
        Ok(())
    }

    /// A result of the call as the caller receives it.
    fn result(&mut self, v: HV, t: &ArgType, on_device: bool) -> RunResult<HostValue> {
        Ok(match (v, t) {
            (HV::Mem(id), ArgType::Array { dtype, .. }) if on_device && self.mems[id].shadow.is_none() && self.mems[id].host.is_none() => {
                // Ownership passes to the caller (the buffer of a caller's argument
                // stays the caller's: it is marked freed already).
                let m = &mut self.mems[id];
                m.freed = true;
                HostValue::Device {
                    ptr: m.ptr,
                    dtype: *dtype,
                    shape: m.shape.clone(),
                }
            }
            (HV::Mem(id), ArgType::Array { dtype, .. }) => {
                let shape = self.mems[id].shape.clone();
                let mut arr = HostArray::try_zeros(*dtype, shape)?;
                self.download(id, &mut arr.data)?;
                HostValue::Array(arr)
            }
            (HV::I(i), ArgType::Scalar { dtype, weak }) => {
                if *dtype == DType::Bool {
                    HostValue::Bool(i != 0)
                } else {
                    HostValue::Int(dtype.int_from_bits(i as u64), *dtype, *weak)
                }
            }
            (HV::F(f), ArgType::Scalar { dtype, weak }) => HostValue::Float(f, *dtype, *weak),
            _ => return Err(RunError::Bundle("result kind mismatch".into())),
        })
    }
}

/// Runs a bundle on `dev`: binds the arguments (array arguments are copied to the
/// device where kernels access them), runs the host program, copies the arrays back (in
/// place into `args`) and returns the results. Host arrays are used in place for the
/// call, with no copy on the host: host code's element writes, and kernels' writes the
/// call brings back before its end (tiles, strided or split transfers, host reads),
/// go into them as it runs, so after an error or an interruption they may hold part of
/// the call's writes (as a Python function's arrays do after an exception).
pub fn run<D: Device>(
    dev: &D,
    kernels: &[D::Kernel],
    b: &Bundle,
    args: &mut [HostValue],
    opts: &RunOptions<'_>,
    limits: &Limits,
) -> RunResult<(Vec<HostValue>, Timing)> {
    run_split(&[(dev, kernels)], &[], b, args, opts, limits)
}

/// [`run`] with every kernel launch split between `devs` (each with the bundle's
/// kernels loaded on it; the first is the main device, which runs library calls and
/// launches that cannot be split): each device runs a contiguous range of the
/// launch's groups, in proportion to `weights` (one per device; equal when empty), on
/// the parts of the arrays that range accesses, which move between devices directly
/// (see the `split` module). Results are those of one device. A call with device arrays,
/// results left on the device, or arguments beyond the memory budget (tiles) runs on
/// the first device alone.
pub fn run_split<D: Device>(
    devs: &[(&D, &[D::Kernel])],
    weights: &[f64],
    b: &Bundle,
    args: &mut [HostValue],
    opts: &RunOptions<'_>,
    limits: &Limits,
) -> RunResult<(Vec<HostValue>, Timing)> {
    let Some(&(dev, kernels)) = devs.first() else {
        return Err(RunError::Arguments("no device to run on".into()));
    };
    let one_device = opts.results_on_device || args.iter().any(|a| matches!(a, HostValue::Device { .. }));
    let peers = if one_device { vec![] } else { devs[1..].to_vec() };
    // Complex arrays are passed as float arrays of one more axis (`ArgType::abi`).
    let complex = HostValue::all_to_abi(args);
    let r = run_abi(dev, kernels, peers, weights, b, args, opts, limits);
    HostValue::all_from_abi(args, &complex);
    r
}

/// Times `reps` calls split between `devs` as [`run_split`] runs them, on data that
/// stays on the devices between calls (the first call also moves it there; arrays are
/// not copied back): the wall-clock time of each call until every device has
/// finished, in seconds.
pub fn time_split<D: Device>(
    devs: &[(&D, &[D::Kernel])],
    weights: &[f64],
    b: &Bundle,
    args: &[HostValue],
    reps: usize,
) -> RunResult<Vec<f64>> {
    let Some(&(dev, kernels)) = devs.first() else {
        return Err(RunError::Arguments("no device to run on".into()));
    };
    // As a call: sizes checked, the signature matched, complex arrays as float arrays.
    let mut args = args.to_vec();
    HostValue::all_to_abi(&mut args);
    let args = &args[..];
    for a in args {
        a.check_size()?;
    }
    if args.len() != b.args.len() || args.iter().zip(&b.args).any(|(a, t)| a.arg_type() != *t) {
        return Err(RunError::Arguments("the arguments do not match the bundle's signature".into()));
    }
    let limits = Limits {
        budget: None,
        ..Limits::from_env()
    };
    let mut ex = Executor::new(dev, kernels, b, false, &limits)?.with_peers(devs[1..].to_vec(), weights);
    let r = (|| {
        ex.bind_args(args)?;
        let mut times = vec![];
        for _ in 0..reps {
            let t0 = Instant::now();
            ex.run_body()?;
            ex.synchronize_all()?;
            times.push(t0.elapsed().as_secs_f64());
        }
        Ok(times)
    })();
    let _ = ex.synchronize_all();
    ex.free_all();
    r
}

#[allow(clippy::too_many_arguments)]
fn run_abi<'a, D: Device>(
    dev: &'a D,
    kernels: &'a [D::Kernel],
    peers: Vec<(&'a D, &'a [D::Kernel])>,
    weights: &[f64],
    b: &'a Bundle,
    args: &mut [HostValue],
    opts: &RunOptions<'a>,
    limits: &Limits,
) -> RunResult<(Vec<HostValue>, Timing)> {
    // Shapes from callers (device arrays, C callers): their sizes must not overflow.
    for a in args.iter() {
        a.check_size()?;
    }
    if args.len() != b.args.len() || args.iter().zip(&b.args).any(|(a, t)| a.arg_type() != *t) {
        let sig: Vec<ArgType> = args.iter().map(|a| a.arg_type()).collect();
        return Err(RunError::Arguments(format!(
            "arguments ({}) do not match the bundle's signature ({})",
            sig.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", "),
            b.args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    // Asking the driver for the free memory costs tens of microseconds, so calls whose
    // arrays are all on the device already (nothing to copy) do not ask.
    let arg_bytes: usize = args
        .iter()
        .map(|a| if let HostValue::Array(x) = a { x.data.len() } else { 0 })
        .sum();
    let budget = match limits.budget {
        Some(b) => b,
        None if arg_bytes == 0 => usize::MAX,
        None => dev.free_memory().map(|free| free / 10 * 9).unwrap_or(usize::MAX),
    };
    let tiled = arg_bytes > budget;
    let peers = if tiled { vec![] } else { peers };
    let mut ex = Executor::new(dev, kernels, b, tiled, limits)?.with_peers(peers, weights);
    ex.budget = budget;
    ex.interrupt = opts.interrupt;
    if let Err(e) = ex.bind_args_in_place(args) {
        ex.free_all();
        return Err(e);
    }
    let t0 = Instant::now();
    let ret = match ex.run_body() {
        Ok(r) => r,
        Err(e) => {
            // Finish what was launched before giving the buffers back.
            let _ = ex.synchronize_all();
            ex.free_all();
            return Err(e);
        }
    };
    let early =
        opts.return_early && opts.results_on_device && !args.iter().any(|a| matches!(a, HostValue::Array(_))) && !ex.status_on_device();
    // The buffers go back to the pool whether the rest succeeds or not.
    let finish = |ex: &mut Executor<'a, D>, args: &mut [HostValue]| -> RunResult<Vec<HostValue>> {
        if !early {
            ex.synchronize_all()?;
            if ex.timing.kernel_s == 0.0 {
                ex.timing.kernel_s = t0.elapsed().as_secs_f64();
            }
        }
        // An index out of bounds (checked mode) or a negative dimension: an error
        // instead of results.
        ex.check_status()?;
        let mut k = 0;
        for a in args.iter_mut() {
            if let HostValue::Array(arr) = a {
                ex.download(ex.arg_mems[k], &mut arr.data)?;
                k += 1;
            }
        }
        let mut results = vec![];
        for (v, t) in ret.iter().zip(&b.results) {
            results.push(ex.result(*v, t, opts.results_on_device)?);
        }
        Ok(results)
    };
    let results = match finish(&mut ex, args) {
        Ok(r) => r,
        Err(e) => {
            let _ = ex.synchronize_all();
            ex.free_all();
            return Err(e);
        }
    };
    // Which results are array arguments (the k-th array argument is `arg_mems[k]`).
    let array_params: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, HostValue::Array(_)))
        .map(|(p, _)| p)
        .collect();
    ex.timing.returned_args = ret
        .iter()
        .map(|v| match *v {
            HV::Mem(id) => ex.arg_mems.iter().position(|m| *m == id).and_then(|k| array_params.get(k).copied()),
            _ => None,
        })
        .collect();
    ex.free_all();
    Ok((results, ex.timing))
}
