//! Launches split between devices (seed 003's mapping of a parallel loop onto
//! processors, on the devices of one host): each launch's groups are cut into
//! contiguous ranges, one per device, in proportion to the devices' weights, and every
//! device runs its range on its own copy of the arrays.
//!
//! Each array has a buffer on every device and its host copy, and records, per place
//! (the host and each device), the boxes whose contents are current there
//! ([`Spread`]). Before a device runs its range, the boxes the range accesses
//! ([`crate::regions`]) are made current on it: copied from another device that holds
//! them (peer to peer, ordered by events, no host round trip: a stencil's halo rows
//! move this way at every step), else from the host. After the launch, the boxes the
//! range writes are current on that device alone. Data stays where it is between
//! launches and across host loop iterations; the host copy is brought up to date when
//! the host reads an element or the call returns.
//!
//! Ranges may write the same elements only through atomic updates that accumulate a
//! reduction (a `shared(...)` scalar's buffer, `#pragma atomic` sums, maxima, minima or
//! products into an array) whose old values the kernel never reads: then each device
//! other than device 0 accumulates into its own buffer, filled with the reduction's
//! identity, and the partials are combined into device 0's result on the host once the
//! launch has finished (results equal one device's within floating-point reassociation,
//! as the atomics of one GPU are). Any other launch whose ranges may write the same
//! elements (a scatter whose boxes the analysis cannot bound) runs whole on device 0,
//! so no launch computes anything but what one device would. Library calls run on
//! device 0.

use super::{Executor, HV};
use crate::array::AlignedBytes;
use crate::device::{Device, DevicePtr};
use crate::error::RunResult;
use crate::regions::{Accesses, IndexBox, LaunchArg};
use appy_ir::attrs::{AtomicKind, Scalar};
use appy_ir::host::{HostOp, KernelProgram, Param};
use appy_ir::reduction::Reduction;
use appy_ir::types::DType;
use std::collections::HashMap;
use std::rc::Rc;

/// Where an array's contents are current: `valid[0]` on the host copy, `valid[1 + d]`
/// on device `d`; `ptrs[d]` is its buffer there.
pub(crate) struct Spread {
    pub ptrs: Vec<DevicePtr>,
    pub bytes: usize,
    pub valid: Vec<Vec<IndexBox>>,
}

/// Adds `b` to a list of boxes, merging boxes whose union is a box.
pub(crate) fn add_box(list: &mut Vec<IndexBox>, b: &IndexBox) {
    if b.is_empty() || list.iter().any(|x| x.contains(b)) {
        return;
    }
    list.retain(|x| !b.contains(x));
    let mut b = b.clone();
    while let Some(i) = list.iter().position(|x| merges(x, &b)) {
        let x = list.swap_remove(i);
        b = x.hull(&b);
    }
    list.push(b);
}

/// Whether the union of two boxes is a box: they agree in every dimension but one, and
/// meet or touch in that one.
fn merges(a: &IndexBox, b: &IndexBox) -> bool {
    let differ: Vec<usize> = (0..a.lo.len()).filter(|&d| a.lo[d] != b.lo[d] || a.hi[d] != b.hi[d]).collect();
    match differ[..] {
        [] => true,
        [d] => a.lo[d] <= b.hi[d] && b.lo[d] <= a.hi[d],
        _ => false,
    }
}

/// The parts of `boxes` outside every box of `list`.
pub(crate) fn minus(mut boxes: Vec<IndexBox>, list: &[IndexBox]) -> Vec<IndexBox> {
    for v in list {
        boxes = boxes.iter().flat_map(|b| b.subtract(v)).collect();
        if boxes.is_empty() {
            break;
        }
    }
    boxes
}

/// Cuts `total` groups into contiguous ranges in proportion to `weights`: `(device,
/// first group, groups)` for each device with a non-empty range.
pub(crate) fn ranges(total: i64, weights: &[f64]) -> Vec<(usize, i64, i64)> {
    let sum: f64 = weights.iter().map(|w| w.max(0.0)).sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![(0, 0, total)];
    }
    let mut out = vec![];
    let (mut acc, mut start) = (0.0, 0i64);
    for (d, w) in weights.iter().enumerate() {
        acc += w.max(0.0);
        let end = if d + 1 == weights.len() {
            total
        } else {
            ((total as f64) * acc / sum).round() as i64
        }
        .clamp(start, total);
        if end > start {
            out.push((d, start, end - start));
        }
        start = end;
    }
    out
}

impl<'a, D: Device> Executor<'a, D> {
    /// Whether launches are split between devices.
    pub(crate) fn split(&self) -> bool {
        !self.peers.is_empty()
    }

    /// Device `d` and its kernels (device 0 is the executor's own).
    fn device(&self, d: usize) -> (&'a D, &'a [D::Kernel]) {
        if d == 0 { (self.dev, self.kernels) } else { self.peers[d - 1] }
    }

    fn devices(&self) -> usize {
        1 + self.peers.len()
    }

    /// A buffer of `bytes` bytes on every device; the host copy `shadow` (current
    /// where `host_valid` says).
    fn spread(&mut self, dtype: DType, shape: Vec<usize>, bytes: usize, shadow: AlignedBytes, host_valid: bool) -> RunResult<usize> {
        let mut ptrs = vec![];
        for d in 0..self.devices() {
            let (dev, _) = self.device(d);
            dev.activate()?;
            match dev.alloc(bytes) {
                Ok(p) => ptrs.push(p),
                Err(e) => {
                    for (k, p) in ptrs.into_iter().enumerate() {
                        let (dev, _) = self.device(k);
                        let _ = dev.activate();
                        dev.release(p, bytes);
                    }
                    self.dev.activate()?;
                    return Err(e);
                }
            }
        }
        self.dev.activate()?;
        let mut valid = vec![vec![]; 1 + ptrs.len()];
        if host_valid {
            valid[0].push(IndexBox::whole(&shape));
        }
        let mut m = super::residency::Mem::device(ptrs[0], bytes, dtype, shape);
        m.shadow = Some(shadow);
        m.spread = Some(Box::new(Spread { ptrs, bytes, valid }));
        self.mems.push(m);
        Ok(self.mems.len() - 1)
    }

    /// A host array argument of a split call: a buffer on every device, filled where
    /// launches access it.
    pub(crate) fn upload_spread(&mut self, dtype: DType, shape: Vec<usize>, host: AlignedBytes) -> RunResult<usize> {
        let bytes = host.len().max(1);
        self.spread(dtype, shape, bytes, host, true)
    }

    /// An allocation of the program in a split call: its contents are undefined until
    /// written (`np.empty`; `np.zeros` is filled by a kernel), so nothing is copied
    /// until a launch or the host writes it.
    pub(crate) fn alloc_spread(&mut self, dtype: DType, shape: Vec<usize>, bytes: usize) -> RunResult<usize> {
        let shadow = AlignedBytes::try_zeroed(bytes).ok_or_else(|| crate::error::RunError::OutOfMemory {
            bytes,
            detail: "the host copy of an array split between devices".into(),
        })?;
        self.spread(dtype, shape, bytes, shadow, false)
    }

    /// Gives the per-device buffers of a split array back.
    pub(crate) fn release_spread(&mut self, id: usize) {
        if let Some(sp) = self.mems[id].spread.take() {
            for (d, p) in sp.ptrs.iter().enumerate() {
                let (dev, _) = self.device(d);
                let _ = dev.activate();
                dev.release(*p, sp.bytes);
            }
            let _ = self.dev.activate();
            self.mems[id].freed = true;
        }
    }

    /// Makes `need` of array `id` current on device `d`: copied from the devices that
    /// hold it (peer to peer), else from the host.
    pub(crate) fn need_on(&mut self, id: usize, d: usize, need: &IndexBox) -> RunResult<()> {
        self.make_current(id, 1 + d, need)
    }

    /// Makes `need` of array `id` current in its host copy: copied from the devices
    /// that hold it (each synchronised first).
    pub(crate) fn need_on_host(&mut self, id: usize, need: &IndexBox) -> RunResult<()> {
        self.make_current(id, 0, need)
    }

    /// Makes `need` of array `id` current at `place` (0: the host copy; `1 + d`: device
    /// `d`), copying the parts that are not from where they are current: for a device,
    /// the other devices first (device to device), the host last; for the host, the
    /// devices. What is current nowhere (an allocation not yet written) is not copied.
    fn make_current(&mut self, id: usize, place: usize, need: &IndexBox) -> RunResult<()> {
        let m = &self.mems[id];
        let Some(sp) = m.spread.as_ref() else { return Ok(()) };
        let mut missing = minus(vec![need.clone()], &sp.valid[place]);
        if missing.is_empty() {
            return Ok(());
        }
        let (es, shape, ptrs) = (m.dtype.size(), m.shape.clone(), sp.ptrs.clone());
        let sources: Vec<usize> = if place == 0 {
            (1..=self.devices()).collect()
        } else {
            self.device(place - 1).0.activate()?;
            (1..=self.devices()).filter(|&e| e != place).chain([0]).collect()
        };
        for src in sources {
            if missing.is_empty() {
                break;
            }
            let held = self.mems[id].spread.as_ref().expect("spread").valid[src].clone();
            let mut synced = false;
            for v in &held {
                for b in &missing {
                    for (start, len) in b.intersect(v).runs(&shape) {
                        let (off, n) = (start * es, len * es);
                        if src == 0 {
                            let (dst, _) = self.device(place - 1);
                            let from = &self.mems[id].shadow.as_ref().expect("split arrays have a host copy")[off..off + n];
                            dst.htod(ptrs[place - 1] + off as u64, from)?;
                            self.timing.htod_bytes += n;
                        } else if place == 0 {
                            let (dev, _) = self.device(src - 1);
                            if !synced {
                                dev.activate()?;
                                dev.synchronize()?;
                                synced = true;
                            }
                            let to = &mut self.mems[id].shadow.as_mut().expect("split arrays have a host copy")[off..off + n];
                            dev.dtoh(to, ptrs[src - 1] + off as u64)?;
                            self.timing.dtoh_bytes += n;
                        } else {
                            let ((dst, _), (from, _)) = (self.device(place - 1), self.device(src - 1));
                            dst.copy_from_peer(ptrs[place - 1] + off as u64, from, ptrs[src - 1] + off as u64, n)?;
                            self.timing.peer_bytes += n;
                        }
                    }
                }
            }
            missing = minus(missing, &held);
        }
        add_box(&mut self.mems[id].spread.as_mut().expect("spread").valid[place], need);
        self.dev.activate()
    }

    /// After device `d` wrote `w` of array `id`: current there alone.
    pub(crate) fn wrote_on(&mut self, id: usize, d: usize, w: &IndexBox) {
        self.own(id, 1 + d, w);
    }

    /// `w` of array `id` is current at `place` alone (0: the host, `1 + d`: device `d`).
    fn own(&mut self, id: usize, at: usize, w: &IndexBox) {
        let Some(sp) = self.mems[id].spread.as_mut() else { return };
        for (place, list) in sp.valid.iter_mut().enumerate() {
            if place == at {
                add_box(list, w);
            } else if list.iter().any(|b| !b.intersect(w).is_empty()) {
                *list = minus(std::mem::take(list), std::slice::from_ref(w));
            }
        }
    }

    /// Reads the raw bits of flat element `flat` of a split array.
    pub(crate) fn read_spread(&mut self, id: usize, flat: usize) -> RunResult<u64> {
        let point = IndexBox::point(&self.mems[id].shape, flat);
        self.need_on_host(id, &point)?;
        let m = &self.mems[id];
        let es = m.dtype.size();
        let mut w = [0u8; 8];
        w[..es].copy_from_slice(&m.shadow.as_ref().expect("split arrays have a host copy")[flat * es..(flat + 1) * es]);
        Ok(u64::from_le_bytes(w))
    }

    /// Writes flat element `flat` of a split array: the host copy, and every device
    /// where the element is current (so it stays current there).
    pub(crate) fn write_spread(&mut self, id: usize, flat: usize, raw: u64) -> RunResult<()> {
        let point = IndexBox::point(&self.mems[id].shape, flat);
        let es = self.mems[id].dtype.size();
        let bytes = &raw.to_le_bytes()[..es];
        let sp = self.mems[id].spread.as_ref().expect("spread");
        let (ptrs, holders): (Vec<DevicePtr>, Vec<bool>) = (
            sp.ptrs.clone(),
            (0..sp.ptrs.len())
                .map(|e| sp.valid[1 + e].iter().any(|b| b.contains(&point)))
                .collect(),
        );
        for (e, held) in holders.iter().enumerate() {
            if *held {
                let (dev, _) = self.device(e);
                dev.activate()?;
                dev.synchronize()?;
                dev.htod(ptrs[e] + (flat * es) as u64, bytes)?;
            }
        }
        self.dev.activate()?;
        let m = &mut self.mems[id];
        m.shadow.as_mut().expect("split arrays have a host copy")[flat * es..(flat + 1) * es].copy_from_slice(bytes);
        add_box(&mut m.spread.as_mut().expect("spread").valid[0], &point);
        Ok(())
    }

    /// Waits for every device.
    pub fn synchronize_all(&self) -> RunResult<()> {
        for d in 1..self.devices() {
            let (dev, _) = self.device(d);
            dev.activate()?;
            dev.synchronize()?;
        }
        self.dev.activate()?;
        self.dev.synchronize()
    }

    /// The boxes of each array a range of a launch reads and writes, by memref (two
    /// parameters may be the same array).
    fn boxes_by_mem(&self, args: &[HV], acc: &Accesses, whole: bool) -> HashMap<usize, (IndexBox, Option<IndexBox>)> {
        let mut out: HashMap<usize, (IndexBox, Option<IndexBox>)> = HashMap::new();
        for (p, v) in args.iter().enumerate() {
            let HV::Mem(id) = *v else { continue };
            if self.mems[id].spread.is_none() {
                continue;
            }
            let (need, w) = if whole {
                let all = IndexBox::whole(&self.mems[id].shape);
                (all.clone(), Some(all))
            } else {
                let Some(need) = acc.touched(p) else { continue };
                (need, acc.writes.get(&p).cloned())
            };
            let e = out.entry(id).or_insert((need.clone(), None));
            e.0 = e.0.hull(&need);
            if let Some(w) = w {
                e.1 = Some(e.1.as_ref().map_or(w.clone(), |x| x.hull(&w)));
            }
        }
        out
    }

    /// A launch of kernel `k` on `total` groups, split between the devices.
    pub(crate) fn launch_split(&mut self, k: usize, total: i64, block: [i64; 3], args: &[HV]) -> RunResult<()> {
        let kp = &self.p.kernels[k];
        let nthreads = block[0] * block[1] * block[2];
        let has_body = kp.body.is_some();
        let largs = self.launch_args(args, &kp.params);
        let mut parts = if has_body && total > 1 {
            ranges(total, &self.weights)
        } else {
            vec![(0, 0, total)]
        };
        let analyse = |this: &mut Self, parts: &[(usize, i64, i64)]| -> Vec<Rc<Accesses>> {
            parts
                .iter()
                .map(|&(_, off, n)| {
                    let mut la = largs.clone();
                    if parts.len() > 1
                        && let Some(last) = la.last_mut()
                    {
                        *last = LaunchArg::Int(off);
                    }
                    this.accesses(k, la, n, nthreads)
                })
                .collect()
        };
        let mut accs = analyse(self, &parts);
        let mut boxes: Vec<_> = accs.iter().map(|a| self.boxes_by_mem(args, a, !has_body)).collect();
        // Arrays the ranges accumulate into with atomics: private partials.
        let mut partials: HashMap<usize, AtomicKind> = HashMap::new();
        let shared = if parts.len() > 1 { overlapping_writes(&boxes) } else { vec![] };
        if !shared.is_empty() {
            match self.partials(k, args, &shared) {
                Some(p) => {
                    partials = p;
                    self.timing.split.0 += 1;
                }
                None => {
                    tracing::debug!("kernel {}: its ranges may write the same elements; not split", kp.name);
                    self.timing.split.1 += 1;
                    parts = vec![(0, 0, total)];
                    accs = analyse(self, &parts);
                    boxes = accs.iter().map(|a| self.boxes_by_mem(args, a, !has_body)).collect();
                }
            }
        } else if parts.len() > 1 {
            self.timing.split.0 += 1;
        }
        // An array accumulated into: the host copy of every box a range accumulates into
        // is made current first, since the devices other than device 0 replace their
        // copy of it with the identity (their copy may be the only current one), and
        // the partials are added onto the host copy afterwards.
        for &id in partials.keys() {
            let hull = boxes
                .iter()
                .filter_map(|bx| bx.get(&id).and_then(|(_, w)| w.clone()))
                .reduce(|a, b| a.hull(&b));
            if let Some(h) = hull {
                self.need_on_host(id, &h)?;
            }
        }
        // Make what each range accesses current on its device (peer copies queue on
        // the receiving device, after the sender's earlier work); a device other than
        // device 0 accumulates a reduction into the identity.
        for (&(d, _, _), bx) in parts.iter().zip(&boxes) {
            for (&id, (need, w)) in bx {
                match (partials.get(&id), w) {
                    (Some(&kind), Some(w)) if d != 0 => self.fill_identity(id, d, w, kind)?,
                    _ => self.need_on(id, d, need)?,
                }
            }
        }
        let mut cells = std::mem::take(&mut self.cells);
        let mut r = Ok(());
        for &(d, off, n) in &parts {
            let ptrs: HashMap<usize, (u64, u64)> = args
                .iter()
                .enumerate()
                .filter_map(|(p, v)| match *v {
                    HV::Mem(id) => self.mems[id].spread.as_ref().map(|s| (p, (s.ptrs[d], s.ptrs[d]))),
                    _ => None,
                })
                .collect();
            let offset = (parts.len() > 1).then_some(off);
            let (dev, kernels) = self.device(d);
            r = dev
                .activate()
                .and_then(|()| self.marshal(k, args, &ptrs, offset, &mut cells))
                .and_then(|()| self.raw_launch_on(dev, &kernels[k], k, &mut cells, [n, 1, 1], block));
            if r.is_err() {
                break;
            }
        }
        self.cells = cells;
        r?;
        for (&(d, _, _), bx) in parts.iter().zip(&boxes) {
            for (&id, (_, w)) in bx {
                if let Some(w) = w
                    && (d == 0 || !partials.contains_key(&id))
                {
                    self.wrote_on(id, d, w);
                }
            }
        }
        for (&id, &kind) in &partials {
            let ranges: Vec<(usize, IndexBox)> = parts
                .iter()
                .zip(&boxes)
                .filter_map(|(&(d, _, _), bx)| bx.get(&id).and_then(|(_, w)| w.clone()).map(|w| (d, w)))
                .collect();
            self.combine(id, kind, &ranges)?;
        }
        self.dev.activate()
    }

    /// The reductions the ranges of launch `k` accumulate into the arrays `shared` (which
    /// they may all write): array id → atomic kind, or `None` when one of them is
    /// written otherwise (then the launch is not split).
    fn partials(&self, k: usize, args: &[HV], shared: &[usize]) -> Option<HashMap<usize, AtomicKind>> {
        let kinds = accumulated(&self.p.kernels[k]);
        let mut out = HashMap::new();
        for &id in shared {
            let dt = self.mems[id].dtype;
            if !matches!(dt, DType::F32 | DType::F64 | DType::I8 | DType::I16 | DType::I32 | DType::I64) {
                return None;
            }
            let mut kind = None;
            for (p, v) in args.iter().enumerate() {
                if *v == HV::Mem(id) {
                    let kp = kinds.get(&p)?;
                    if kind.is_some_and(|x| x != *kp) {
                        return None;
                    }
                    kind = Some(*kp);
                }
            }
            out.insert(id, kind?);
        }
        Some(out)
    }

    /// Fills box `w` of array `id` on device `d` with the identity of the reduction
    /// `kind` accumulates (that part of the buffer is no longer a copy of the array).
    fn fill_identity(&mut self, id: usize, d: usize, w: &IndexBox, kind: AtomicKind) -> RunResult<()> {
        let m = &self.mems[id];
        let (dt, es, shape) = (m.dtype, m.dtype.size(), m.shape.clone());
        let ptr = m.spread.as_ref().expect("spread").ptrs[d];
        let raw = super::residency::encode(dt, identity(kind, dt))?;
        let (dev, _) = self.device(d);
        dev.activate()?;
        for (start, len) in w.runs(&shape) {
            let bytes: Vec<u8> = raw.to_le_bytes()[..es].iter().copied().cycle().take(len * es).collect();
            dev.htod(ptr + (start * es) as u64, &bytes)?;
            self.timing.htod_bytes += bytes.len();
        }
        if let Some(sp) = self.mems[id].spread.as_mut() {
            sp.valid[1 + d] = minus(std::mem::take(&mut sp.valid[1 + d]), std::slice::from_ref(w));
        }
        self.dev.activate()
    }

    /// After a launch whose ranges accumulated into array `id` (device 0 into the array,
    /// the others into the identity; `ranges`: each device's written box): the
    /// partials combined into the host copy, which is then the only current one of
    /// those boxes.
    fn combine(&mut self, id: usize, kind: AtomicKind, ranges: &[(usize, IndexBox)]) -> RunResult<()> {
        let Some(all) = ranges.iter().map(|(_, w)| w.clone()).reduce(|a, b| a.hull(&b)) else {
            return Ok(());
        };
        // Device 0's result (and whatever else of the hull is elsewhere) to the host.
        self.need_on_host(id, &all)?;
        let m = &self.mems[id];
        let (dt, es, shape) = (m.dtype, m.dtype.size(), m.shape.clone());
        let ptrs = m.spread.as_ref().expect("spread").ptrs.clone();
        for (d, w) in ranges.iter().filter(|(d, _)| *d != 0) {
            let (dev, _) = self.device(*d);
            dev.activate()?;
            dev.synchronize()?;
            for (start, len) in w.runs(&shape) {
                let mut part = vec![0u8; len * es];
                dev.dtoh(&mut part, ptrs[*d] + (start * es) as u64)?;
                self.timing.dtoh_bytes += part.len();
                let shadow = self.mems[id].shadow.as_mut().expect("split arrays have a host copy");
                for (i, chunk) in part.chunks_exact(es).enumerate() {
                    let at = (start + i) * es;
                    let mut a = [0u8; 8];
                    let mut b = [0u8; 8];
                    a[..es].copy_from_slice(&shadow[at..at + es]);
                    b[..es].copy_from_slice(chunk);
                    let cur = super::residency::decode(dt, u64::from_le_bytes(a));
                    let v = super::residency::decode(dt, u64::from_le_bytes(b));
                    let r = super::residency::encode(dt, super::interp::atomic(kind, dt, cur, v)?)?;
                    shadow[at..at + es].copy_from_slice(&r.to_le_bytes()[..es]);
                }
            }
        }
        self.own(id, 0, &all);
        self.dev.activate()
    }
}

/// The array parameters of a kernel that its body only accumulates into with atomics
/// of one reduction's kind, never reading the old values (and never loading or storing
/// them otherwise): parameter → kind.
fn accumulated(kernel: &KernelProgram) -> HashMap<usize, AtomicKind> {
    let Some(body) = &kernel.body else { return HashMap::new() };
    let ops = body.walk();
    let mut out = HashMap::new();
    'params: for (p, (&slot, param)) in kernel.args.iter().zip(&kernel.params).enumerate() {
        if !matches!(param, Param::Memref(_)) {
            continue;
        }
        let mut kind = None;
        for op in &ops {
            match op {
                HostOp::AtomicRmw {
                    kind: k,
                    dst,
                    value,
                    mem,
                    indices,
                } if *mem == slot => {
                    let reduction = Reduction::of_atomic_kind(*k).is_some();
                    if !reduction || *value == slot || indices.contains(&slot) || body.uses(*dst) || kind.is_some_and(|x| x != *k) {
                        continue 'params;
                    }
                    kind = Some(*k);
                }
                HostOp::Dim { mem, .. } if *mem == slot => {}
                op => {
                    if op.operands().is_none_or(|o| o.contains(&slot)) {
                        continue 'params;
                    }
                }
            }
        }
        if let Some(k) = kind {
            out.insert(p, k);
        }
    }
    out
}

/// The identity of the reduction atomics of kind `kind` accumulate, over `dt` (a sum's
/// is -0.0, which leaves every float unchanged, -0.0 included).
fn identity(kind: AtomicKind, dt: DType) -> HV {
    if kind == AtomicKind::Addf {
        return HV::F(-0.0);
    }
    match Reduction::of_atomic_kind(kind).map(|(r, _)| r.identity(dt)) {
        Some(Scalar::Float(f)) => HV::F(f),
        Some(Scalar::Int(i)) => HV::I(i),
        None => HV::I(0),
    }
}

/// The arrays of which two ranges of a launch may write the same element.
fn overlapping_writes(boxes: &[HashMap<usize, (IndexBox, Option<IndexBox>)>]) -> Vec<usize> {
    let mut out = vec![];
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            for (id, (_, wa)) in a {
                if let (Some(wa), Some((_, Some(wb)))) = (wa, b.get(id))
                    && !wa.intersect(wb).is_empty()
                    && !out.contains(id)
                {
                    out.push(*id);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bx(lo: &[i64], hi: &[i64]) -> IndexBox {
        IndexBox {
            lo: lo.to_vec(),
            hi: hi.to_vec(),
        }
    }

    #[test]
    fn ranges_cover_the_groups_once_in_proportion() {
        assert_eq!(ranges(10, &[1.0, 1.0]), vec![(0, 0, 5), (1, 5, 5)]);
        assert_eq!(ranges(7, &[1.0, 1.0, 1.0]), vec![(0, 0, 2), (1, 2, 3), (2, 5, 2)]);
        assert_eq!(ranges(10, &[3.0, 1.0]), vec![(0, 0, 8), (1, 8, 2)]);
        // Fewer groups than devices: empty ranges are left out.
        assert_eq!(ranges(1, &[1.0, 1.0, 1.0, 1.0]), vec![(1, 0, 1)]);
        assert_eq!(ranges(2, &[1.0, 1.0, 1.0, 1.0]), vec![(0, 0, 1), (2, 1, 1)]);
        assert_eq!(ranges(0, &[1.0, 1.0]), vec![]);
        for total in 0..40 {
            for w in [&[1.0, 2.0][..], &[0.5, 0.0, 1.5], &[1.0; 4]] {
                let r = ranges(total, w);
                assert_eq!(r.iter().map(|p| p.2).sum::<i64>(), total);
                let mut next = 0;
                for (_, off, n) in r {
                    assert_eq!(off, next);
                    assert!(n > 0);
                    next += n;
                }
            }
        }
    }

    #[test]
    fn box_lists_merge_and_subtract() {
        let mut l = vec![];
        // Rows written one after another merge into one box.
        for i in 0..5 {
            add_box(&mut l, &bx(&[i, 0], &[i + 1, 8]));
        }
        assert_eq!(l, vec![bx(&[0, 0], &[5, 8])]);
        add_box(&mut l, &bx(&[1, 1], &[2, 2]));
        assert_eq!(l.len(), 1);
        // A halo row taken out and put back.
        let l2 = minus(l.clone(), &[]);
        assert_eq!(l2, l);
        let mut cut = minus(l.clone(), &[bx(&[4, 0], &[5, 8])]);
        assert_eq!(cut, vec![bx(&[0, 0], &[4, 8])]);
        add_box(&mut cut, &bx(&[4, 0], &[5, 8]));
        assert_eq!(cut, vec![bx(&[0, 0], &[5, 8])]);
        // Not mergeable: two corners.
        let mut c = vec![];
        add_box(&mut c, &bx(&[0, 0], &[1, 1]));
        add_box(&mut c, &bx(&[1, 1], &[2, 2]));
        assert_eq!(c.len(), 2);
        assert_eq!(IndexBox::point(&[3, 4], 7), bx(&[1, 3], &[2, 4]));
    }
}
