//! Residency: where each array's current contents are. An array argument keeps its
//! host copy and lists the boxes whose device copy is current (`valid`) and the boxes
//! kernels may have written (`dirty`, copied back at the end); parts move to the device
//! when a kernel first accesses them (see [`crate::regions`]). Host code reading an
//! element reads the device copy if it is current there, else the host copy.

use super::{Executor, HV};
use crate::array::AlignedBytes;
use crate::device::{Device, DevicePtr};
use crate::error::{RunError, RunResult};
use crate::lattice::{Lattice, rows};
use crate::regions::IndexBox;
use appy_ir::types::DType;

/// A memref the program uses.
pub(crate) struct Mem {
    pub ptr: DevicePtr,
    /// Size of the device buffer from `Device::alloc` (0: not ours to release).
    pub bytes: usize,
    /// Host scalar slot (`memref.alloca` in host code).
    pub host: Option<Vec<u64>>,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub freed: bool,
    /// For an array argument: the host copy, moved to the device only where kernels
    /// access it (`valid`: boxes whose device copy is current; `dirty`: boxes kernels
    /// may have written, copied back at the end). For a call ([`super::run`]) it is the
    /// argument's own memory, lent for the call ([`AlignedBytes::borrowed`]); a copy of
    /// it where the body runs repeatedly (benchmarks).
    pub shadow: Option<AlignedBytes>,
    pub valid: Vec<IndexBox>,
    pub dirty: Vec<IndexBox>,
    /// Where kernels accessed only some elements of a box with constant strides: the
    /// elements whose device copy is current (then `valid` is empty), and those kernels
    /// may have written (then `dirty` is empty).
    pub strided: Option<(IndexBox, Lattice)>,
    pub strided_dirty: Option<(IndexBox, Lattice)>,
    /// In a call split between devices: the array's buffer on each device and where
    /// its contents are current ([`super::split`]; `valid` and `dirty` are unused).
    pub spread: Option<Box<super::split::Spread>>,
}

impl Mem {
    fn new(ptr: DevicePtr, bytes: usize, dtype: DType, shape: Vec<usize>) -> Mem {
        Mem {
            ptr,
            bytes,
            host: None,
            dtype,
            shape,
            freed: false,
            shadow: None,
            valid: vec![],
            dirty: vec![],
            strided: None,
            strided_dirty: None,
            spread: None,
        }
    }
    /// A host scalar slot (`memref.alloca`) of `elems` elements.
    pub fn slot(dtype: DType, shape: Vec<usize>, elems: usize) -> Mem {
        Mem {
            host: Some(vec![0; elems.max(1)]),
            ..Mem::new(0, 0, dtype, shape)
        }
    }
    /// Device memory from `Device::alloc`.
    pub fn device(ptr: DevicePtr, bytes: usize, dtype: DType, shape: Vec<usize>) -> Mem {
        Mem::new(ptr, bytes, dtype, shape)
    }
}

impl<D: Device> Executor<'_, D> {
    /// Makes a host array (its contents `host`) available to kernels: device memory is
    /// allocated (none when launches run in tiles), and parts are copied when a kernel
    /// first accesses them.
    pub(crate) fn upload(&mut self, dtype: DType, shape: Vec<usize>, host: AlignedBytes) -> RunResult<usize> {
        if self.split() {
            return self.upload_spread(dtype, shape, host);
        }
        let bytes = host.len().max(1);
        let ptr = if self.tiled { 0 } else { self.dev.alloc(bytes)? };
        let mut m = Mem::new(ptr, if ptr == 0 { 0 } else { bytes }, dtype, shape);
        m.shadow = Some(host);
        self.mems.push(m);
        Ok(self.mems.len() - 1)
    }

    /// A caller's device array: used in place, never copied or freed.
    pub(crate) fn borrow(&mut self, ptr: DevicePtr, dtype: DType, shape: &[usize]) -> usize {
        let mut m = Mem::new(ptr, 0, dtype, shape.to_vec());
        m.freed = true;
        self.mems.push(m);
        self.mems.len() - 1
    }

    /// Copies the current contents of an array to `out`: for an argument, the parts
    /// kernels wrote come back from the device into the host copy.
    pub(crate) fn download(&mut self, id: usize, out: &mut [u8]) -> RunResult<()> {
        if out.is_empty() {
            return Ok(());
        }
        if self.mems[id].spread.is_some() {
            let whole = IndexBox::whole(&self.mems[id].shape);
            self.need_on_host(id, &whole)?;
            copy_out(self.mems[id].shadow.as_ref().expect("split arrays have a host copy"), out);
            return Ok(());
        }
        self.dev.synchronize()?;
        self.flush_strided(id)?;
        let m = &mut self.mems[id];
        let Some(shadow) = m.shadow.as_mut() else {
            self.timing.dtoh_bytes += out.len();
            return self.dev.dtoh(out, m.ptr);
        };
        let es = m.dtype.size();
        if m.ptr == 0 {
            copy_out(shadow, out);
            return Ok(());
        }
        // A lent argument is `out` itself: the written parts go straight there.
        let lent = std::ptr::eq(shadow.as_ptr(), out.as_ptr());
        for b in std::mem::take(&mut m.dirty) {
            for (start, len) in b.runs(&m.shape) {
                let r = start * es..(start + len) * es;
                let dst = if lent { &mut out[r] } else { &mut shadow[r] };
                self.dev.dtoh(dst, m.ptr + (start * es) as u64)?;
                self.timing.dtoh_bytes += len * es;
            }
        }
        copy_out(shadow, out);
        Ok(())
    }

    /// Before a launch: copies the parts of `id` that the kernel accesses and whose
    /// device copy is not current; `written` is marked dirty.
    pub(crate) fn make_valid(&mut self, id: usize, need: &IndexBox, written: Option<&IndexBox>) -> RunResult<()> {
        if self.mems[id].spread.is_some() {
            // Library calls run on device 0.
            self.need_on(id, 0, need)?;
            if let Some(w) = written {
                self.wrote_on(id, 0, w);
            }
            return Ok(());
        }
        self.densify(id)?;
        let m = &mut self.mems[id];
        let Some(shadow) = m.shadow.as_ref() else { return Ok(()) };
        let es = m.dtype.size();
        let mut missing = vec![need.clone()];
        for v in &m.valid {
            missing = missing.iter().flat_map(|b| b.subtract(v)).collect();
        }
        for b in &missing {
            for (start, len) in b.runs(&m.shape) {
                let src = &shadow[start * es..(start + len) * es];
                self.dev.htod(m.ptr + (start * es) as u64, src)?;
                self.timing.htod_bytes += len * es;
            }
        }
        m.valid.extend(missing);
        if let Some(w) = written.filter(|w| !w.is_empty() && !m.dirty.iter().any(|d| d.contains(w))) {
            m.dirty.push(w.clone());
        }
        Ok(())
    }

    /// Before a launch that accesses the elements `lat` of `need` (constant strides):
    /// where the array has no current part on the device yet, or only strided parts
    /// this access stays within, only the elements not yet there are copied (packed,
    /// seed 002 §5.3); the written elements are marked. Any other case is the dense
    /// [`Self::make_valid`] of the box.
    pub(crate) fn make_valid_strided(
        &mut self,
        id: usize,
        need: &IndexBox,
        lat: &Lattice,
        written: Option<(&IndexBox, Option<&Lattice>)>,
    ) -> RunResult<()> {
        let m = &self.mems[id];
        let fresh = m.valid.is_empty() && m.dirty.is_empty() && m.strided.is_none();
        let within = m.strided.as_ref().is_some_and(|(b, l)| l.covers(b, need, lat));
        if m.spread.is_some() || m.shadow.is_none() || m.ptr == 0 || !(fresh || within) {
            return self.make_valid(id, need, written.map(|w| w.0));
        }
        let dense = |b: &IndexBox| Lattice::dense(b.lo.len());
        let written = written
            .filter(|(w, _)| !w.is_empty())
            .map(|(w, l)| (w.clone(), l.cloned().unwrap_or_else(|| dense(w))));
        // A new set of written elements: the old one goes back to the host first.
        if let (Some(w), Some(d)) = (&written, &self.mems[id].strided_dirty)
            && !d.1.covers(&d.0, &w.0, &w.1)
        {
            self.flush_strided(id)?;
        }
        let m = &mut self.mems[id];
        let es = m.dtype.size();
        if fresh {
            let rs = rows(need, lat, &m.shape, es);
            self.dev.htod_rows(m.ptr, m.shadow.as_ref().expect("checked"), &rs)?;
            self.timing.htod_bytes += rs.iter().map(|r| r.bytes()).sum::<usize>();
            m.strided = Some((need.clone(), lat.clone()));
        }
        if let Some(w) = written
            && m.strided_dirty.is_none()
        {
            m.strided_dirty = Some(w);
        }
        Ok(())
    }

    /// Copies the strided elements kernels wrote back to the host copy.
    fn flush_strided(&mut self, id: usize) -> RunResult<()> {
        let m = &mut self.mems[id];
        if let (Some((b, l)), Some(shadow)) = (m.strided_dirty.take(), m.shadow.as_mut()) {
            let rs = rows(&b, &l, &m.shape, m.dtype.size());
            self.dev.synchronize()?;
            self.dev.dtoh_rows(shadow, m.ptr, &rs)?;
            self.timing.dtoh_bytes += rs.iter().map(|r| r.bytes()).sum::<usize>();
        }
        Ok(())
    }

    /// Ends strided residency: written elements back to the host copy, which is then
    /// current everywhere, and nothing counted as on the device (a dense access copies
    /// its box again).
    fn densify(&mut self, id: usize) -> RunResult<()> {
        if self.mems[id].strided.is_some() {
            self.flush_strided(id)?;
            self.mems[id].strided = None;
        }
        Ok(())
    }

    /// Whether flat element `flat` of `id` is current on the device.
    pub(crate) fn on_device(&self, id: usize, flat: usize) -> bool {
        let m = &self.mems[id];
        if m.shadow.is_none() {
            return true;
        }
        let point = IndexBox::point(&m.shape, flat);
        m.valid.iter().any(|v| v.contains(&point)) || m.strided.as_ref().is_some_and(|(b, l)| l.holds(b, &point.lo))
    }

    /// Gives every buffer the call allocated back (to the pool).
    pub fn free_all(&mut self) {
        for id in 0..self.mems.len() {
            self.release_spread(id);
        }
        for m in &mut self.mems {
            if m.host.is_none() && !m.freed && m.ptr != 0 {
                if m.bytes > 0 {
                    self.dev.release(m.ptr, m.bytes);
                } else {
                    let _ = self.dev.free(m.ptr);
                }
                m.freed = true;
            }
        }
    }

    /// `memref.dealloc`.
    pub(crate) fn dealloc(&mut self, id: usize) -> RunResult<()> {
        if self.mems[id].spread.is_some() {
            self.release_spread(id);
            return Ok(());
        }
        let m = &mut self.mems[id];
        if m.host.is_none() && !m.freed {
            if m.bytes > 0 {
                self.dev.release(m.ptr, m.bytes);
            } else {
                self.dev.free(m.ptr)?;
            }
            m.freed = true;
        }
        Ok(())
    }

    /// Reads flat element `flat` of memref `id` (host code's `memref.load`).
    pub(crate) fn read_elem(&mut self, id: usize, flat: usize) -> RunResult<HV> {
        let m = &self.mems[id];
        let dt = m.dtype;
        let raw: u64 = if let Some(h) = &m.host {
            h[flat]
        } else if m.spread.is_some() {
            self.read_spread(id, flat)?
        } else if let Some(sh) = m.shadow.as_ref().filter(|_| !self.on_device(id, flat)) {
            let mut w = [0u8; 8];
            w[..dt.size()].copy_from_slice(&sh[flat * dt.size()..(flat + 1) * dt.size()]);
            u64::from_le_bytes(w)
        } else {
            let mut b = [0u8; 8];
            self.dev.synchronize()?;
            self.dev.dtoh(&mut b[..dt.size()], m.ptr + (flat * dt.size()) as u64)?;
            u64::from_le_bytes(b)
        };
        Ok(decode(dt, raw))
    }

    /// Writes flat element `flat` of memref `id` (host code's `memref.store`): the host
    /// copy, and the device copy when it is current there.
    pub(crate) fn write_elem(&mut self, id: usize, flat: usize, v: HV) -> RunResult<()> {
        let dt = self.mems[id].dtype;
        let raw = encode(dt, v)?;
        if self.mems[id].spread.is_some() {
            return self.write_spread(id, flat, raw);
        }
        let on_device = self.on_device(id, flat);
        let m = &mut self.mems[id];
        if let Some(sh) = &mut m.shadow {
            sh[flat * dt.size()..(flat + 1) * dt.size()].copy_from_slice(&raw.to_le_bytes()[..dt.size()]);
        }
        if let Some(h) = &mut m.host {
            h[flat] = raw;
        } else if on_device {
            let b = &raw.to_le_bytes()[..dt.size()];
            self.dev.htod_ordered(m.ptr + (flat * dt.size()) as u64, b)?;
        }
        Ok(())
    }
}

/// Copies an array's host copy into `out`, unless the host copy is `out` itself (an
/// argument lent for the call).
fn copy_out(shadow: &AlignedBytes, out: &mut [u8]) {
    if !std::ptr::eq(shadow.as_ptr(), out.as_ptr()) {
        out.copy_from_slice(shadow);
    }
}

/// The value of host code an element of type `dt` with bits `raw` holds.
pub(super) fn decode(dt: DType, raw: u64) -> HV {
    match dt {
        DType::F32 => HV::F(f32::from_bits(raw as u32) as f64),
        DType::F64 => HV::F(f64::from_bits(raw)),
        // A byte: a bool array holds 0 or 1, and a host slot of an int8 or uint8
        // variable is a `memref<i8>` too (the IR does not tell them apart): its
        // value is the byte sign-extended, as host code holds an `i8`.
        DType::Bool => HV::I(raw as u8 as i8 as i64),
        DType::F16 | DType::BF16 => HV::F(dt.half().expect("16-bit float").to_f64(raw as u16)),
        // Host code holds integers sign-extended at their width (signless, as MLIR).
        d => HV::I(crate::exec::scalar::wrap(raw as i64, d.bits() as u8)),
    }
}

/// The bits of an element of type `dt` holding host value `v`.
pub(super) fn encode(dt: DType, v: HV) -> RunResult<u64> {
    Ok(match (dt, v) {
        (DType::F32, HV::F(f)) => (f as f32).to_bits() as u64,
        (DType::F64, HV::F(f)) => f.to_bits(),
        (DType::Bool, HV::I(i)) => i as u8 as u64,
        (d, HV::I(i)) if !d.is_float() => d.int_to_bits(i),
        (DType::F16 | DType::BF16, HV::F(f)) => dt.half().expect("16-bit float").from_f64(f) as u64,
        _ => return Err(RunError::Bundle("store of a mismatched value".into())),
    })
}
