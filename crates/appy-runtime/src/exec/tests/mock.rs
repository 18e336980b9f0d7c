//! A device in host memory for the executor's tests: memory is a map of allocations,
//! copies and launches are recorded, kernels do nothing (what a launch moves and
//! passes is what the tests check), and the library calls compute their results with
//! the reference loops of [`crate::device::reference`], so that the executor's operand offsets and leading dimensions are
//! checked by value.

use crate::device::{Device, DevicePtr, GemmCall, GemvCall, PotrfCall, TrsvCall, reference};
use crate::error::{RunError, RunResult};
use appy_ir::types::DType;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};

/// What the executor asked the device to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A pooled allocation of this many bytes (from the pool or new).
    Alloc(usize),
    /// Host → device copy: address, bytes.
    Htod(DevicePtr, usize),
    /// Device → host copy: address, bytes.
    Dtoh(DevicePtr, usize),
    /// A launch: kernel, grid, block, parameter cells.
    Launch(String, [u32; 3], [u32; 3], Vec<u64>),
    /// A library call, by name.
    Library(&'static str),
    /// A copy from another device into this one: destination, source, bytes.
    Peer(DevicePtr, DevicePtr, usize),
}

/// A recorded launch: kernel, grid, block, parameter cells.
pub type Launch = (String, [u32; 3], [u32; 3], Vec<u64>);

/// The test device.
pub struct Mock {
    mem: RefCell<BTreeMap<u64, Vec<u8>>>,
    next: Cell<u64>,
    pool: RefCell<HashMap<usize, Vec<u64>>>,
    /// Everything the executor did, in order.
    pub log: RefCell<Vec<Event>>,
    /// What [`Device::free_memory`] reports.
    pub free: Option<usize>,
    /// Record nothing (for timing the executor).
    pub quiet: bool,
    /// Number of launches.
    pub launched: Cell<usize>,
    /// Number of waits for the device ([`Device::synchronize`]).
    pub synced: Cell<usize>,
}

impl Mock {
    pub fn new() -> Mock {
        Mock {
            mem: RefCell::new(BTreeMap::new()),
            next: Cell::new(0x10_0000),
            pool: RefCell::default(),
            log: RefCell::default(),
            free: Some(1 << 30),
            quiet: false,
            launched: Cell::new(0),
            synced: Cell::new(0),
        }
    }

    fn new_buffer(&self, bytes: usize) -> u64 {
        let p = self.next.get();
        self.next.set(p + (bytes.max(1) as u64).div_ceil(256) * 256 + 256);
        self.mem.borrow_mut().insert(p, vec![0xA5; bytes.max(1)]);
        p
    }

    /// The allocation holding `[addr, addr + len)`, and `addr`'s offset in it.
    fn locate(&self, addr: u64, len: usize) -> RunResult<(u64, usize)> {
        let mem = self.mem.borrow();
        let (base, buf) = mem
            .range(..=addr)
            .next_back()
            .ok_or_else(|| RunError::driver("mock access", format!("{addr:#x} is not allocated")))?;
        let off = (addr - base) as usize;
        if off + len > buf.len() {
            return Err(RunError::driver("mock access", format!("{addr:#x}+{len} is out of its allocation")));
        }
        Ok((*base, off))
    }

    /// Reads `dst.len()` bytes at `addr`.
    pub fn read(&self, addr: u64, dst: &mut [u8]) -> RunResult<()> {
        let (base, off) = self.locate(addr, dst.len())?;
        dst.copy_from_slice(&self.mem.borrow()[&base][off..off + dst.len()]);
        Ok(())
    }

    /// Writes `src` at `addr`.
    pub fn write(&self, addr: u64, src: &[u8]) -> RunResult<()> {
        let (base, off) = self.locate(addr, src.len())?;
        self.mem.borrow_mut().get_mut(&base).expect("located")[off..off + src.len()].copy_from_slice(src);
        Ok(())
    }

    /// Element `i` (of type `dt`) of the array at `base`.
    pub fn get(&self, dt: DType, base: u64, i: usize) -> f64 {
        let mut b = [0u8; 8];
        self.read(base + (i * dt.size()) as u64, &mut b[..dt.size()]).expect("mapped");
        match dt {
            DType::F32 => f32::from_le_bytes(b[..4].try_into().unwrap()) as f64,
            DType::F64 => f64::from_le_bytes(b),
            _ => panic!("float element expected"),
        }
    }

    /// Sets element `i` of the array at `base`.
    pub fn set(&self, dt: DType, base: u64, i: usize, v: f64) {
        match dt {
            DType::F32 => self.write(base + (i * 4) as u64, &(v as f32).to_le_bytes()).expect("mapped"),
            DType::F64 => self.write(base + (i * 8) as u64, &v.to_le_bytes()).expect("mapped"),
            _ => panic!("float element expected"),
        }
    }

    /// The recorded launches.
    pub fn launches(&self) -> Vec<Launch> {
        self.log
            .borrow()
            .iter()
            .filter_map(|e| match e {
                Event::Launch(n, g, b, p) => Some((n.clone(), *g, *b, p.clone())),
                _ => None,
            })
            .collect()
    }

    /// Bytes copied host → device and device → host.
    pub fn copied(&self) -> (usize, usize) {
        let mut t = (0, 0);
        for e in self.log.borrow().iter() {
            match e {
                Event::Htod(_, n) => t.0 += n,
                Event::Dtoh(_, n) => t.1 += n,
                _ => {}
            }
        }
        t
    }

    /// Number of live allocations (pooled buffers count as live).
    pub fn live(&self) -> usize {
        self.mem.borrow().len()
    }

    fn log(&self, e: Event) {
        if !self.quiet {
            self.log.borrow_mut().push(e);
        }
    }
}

impl Device for Mock {
    type Kernel = ();

    fn alloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        self.log(Event::Alloc(bytes));
        if let Some(p) = self.pool.borrow_mut().get_mut(&bytes).and_then(|v| v.pop()) {
            return Ok(p);
        }
        if self.free.is_some_and(|f| bytes > f) {
            return Err(RunError::OutOfMemory {
                bytes,
                detail: "mock".into(),
            });
        }
        Ok(self.new_buffer(bytes))
    }

    fn release(&self, ptr: DevicePtr, bytes: usize) {
        self.pool.borrow_mut().entry(bytes).or_default().push(ptr);
    }

    fn malloc(&self, bytes: usize) -> RunResult<DevicePtr> {
        Ok(self.new_buffer(bytes))
    }

    fn free(&self, ptr: DevicePtr) -> RunResult<()> {
        self.mem
            .borrow_mut()
            .remove(&ptr)
            .map(|_| ())
            .ok_or_else(|| RunError::driver("mock free", format!("{ptr:#x} is not an allocation")))
    }

    fn htod(&self, dst: DevicePtr, src: &[u8]) -> RunResult<()> {
        self.log(Event::Htod(dst, src.len()));
        self.write(dst, src)
    }

    fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> RunResult<()> {
        self.log(Event::Dtoh(src, dst.len()));
        self.read(src, dst)
    }

    fn dtod(&self, dst: DevicePtr, src: DevicePtr, bytes: usize) -> RunResult<()> {
        let mut tmp = vec![0u8; bytes];
        self.read(src, &mut tmp)?;
        self.write(dst, &tmp)
    }

    fn synchronize(&self) -> RunResult<()> {
        self.synced.set(self.synced.get() + 1);
        Ok(())
    }

    fn copy_from_peer(&self, dst: DevicePtr, from: &Self, src: DevicePtr, bytes: usize) -> RunResult<()> {
        self.log(Event::Peer(dst, src, bytes));
        let mut tmp = vec![0u8; bytes];
        from.read(src, &mut tmp)?;
        self.write(dst, &tmp)
    }

    fn launch(&self, _: &(), name: &str, grid: [u32; 3], block: [u32; 3], params: &mut [u64]) -> RunResult<()> {
        self.launched.set(self.launched.get() + 1);
        if !self.quiet {
            self.log(Event::Launch(name.to_string(), grid, block, params.to_vec()));
        }
        Ok(())
    }

    fn free_memory(&self) -> Option<usize> {
        self.free
    }

    fn gemm(&self, g: &GemmCall) -> RunResult<()> {
        self.log(Event::Library("gemm"));
        reference::gemm(self, g);
        Ok(())
    }

    fn gemv(&self, g: &GemvCall) -> RunResult<()> {
        self.log(Event::Library("gemv"));
        reference::gemv(self, g);
        Ok(())
    }

    fn trsv(&self, t: &TrsvCall) -> RunResult<()> {
        self.log(Event::Library("trsv"));
        reference::trsv(self, t);
        Ok(())
    }

    fn potrf(&self, p: &PotrfCall) -> RunResult<i32> {
        self.log(Event::Library("potrf"));
        Ok(reference::potrf(self, p))
    }
}

impl reference::Elements for Mock {
    fn get(&self, dt: DType, base: DevicePtr, i: usize) -> f64 {
        Mock::get(self, dt, base, i)
    }
    fn set(&self, dt: DType, base: DevicePtr, i: usize, v: f64) {
        Mock::set(self, dt, base, i, v)
    }
}
