//! Kernel launches: the data a launch accesses is made current on the device (the
//! access analysis of [`crate::regions`]), the arguments are marshalled into the
//! kernel's parameter cells, and launches whose data exceeds the memory budget run in
//! tiles of blocks.

use super::{Executor, HV};
use crate::device::Device;
use crate::error::{RunError, RunResult};
use crate::regions::{Accesses, IndexBox, LaunchArg};
use appy_ir::host::Param;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

/// Access analyses of launches by (kernel, blocks, threads per block, arguments).
pub(crate) type Analyses = HashMap<(usize, i64, i64, Vec<LaunchArg>), Rc<Accesses>>;

/// The flat element range `[f0, f1)` of a tiled array parameter `p`, and whether the
/// tile writes it.
type TileRange = (usize, usize, usize, bool);

impl<D: Device> Executor<'_, D> {
    /// A launch's arguments as the access analysis sees them.
    pub(super) fn launch_args(&self, args: &[HV], params: &[Param]) -> Vec<LaunchArg> {
        args.iter()
            .zip(params)
            .map(|(v, p)| match *v {
                HV::Mem(id) => LaunchArg::Array(self.mems[id].shape.clone()),
                HV::I(i) if !matches!(p, Param::F32 | Param::F64 | Param::F16 | Param::BF16) => LaunchArg::Int(i),
                _ => LaunchArg::Float,
            })
            .collect()
    }

    /// The boxes launch `k` with `largs` on `grid` blocks of `block` threads accesses
    /// (remembered: host loops repeat the same launches).
    pub(super) fn accesses(&mut self, k: usize, largs: Vec<LaunchArg>, grid: i64, block: i64) -> Rc<Accesses> {
        let key = (k, grid, block, largs);
        if let Some(a) = self.analyses.get(&key) {
            return a.clone();
        }
        let acc = Rc::new(crate::regions::analyse(&self.p.kernels[k], &key.3, grid, block));
        self.analyses.insert(key, acc.clone());
        acc
    }

    /// Launches kernel `k` of the bundle on `grid` blocks of `block` threads.
    pub(crate) fn launch(&mut self, k: usize, grid: [i64; 3], block: [i64; 3], args: &[HV]) -> RunResult<()> {
        let kp = &self.p.kernels[k];
        if args.len() != kp.params.len() {
            return Err(RunError::Bundle(format!(
                "kernel {}: {} arguments for {} parameters",
                kp.name,
                args.len(),
                kp.params.len()
            )));
        }
        if self.split() {
            return self.launch_split(k, grid[0] * grid[1] * grid[2], block, args);
        }
        if self.tiled {
            return self.launch_tiled(k, args, grid[0] * grid[1] * grid[2], block);
        }
        // Move the parts of the arguments that this launch accesses (seed 002 §5);
        // arrays already on the device (caller's buffers) need no analysis.
        let host_copies = args.iter().any(|v| matches!(*v, HV::Mem(id) if self.mems[id].shadow.is_some()));
        if !host_copies {
        } else if kp.body.is_some() {
            let largs = self.launch_args(args, &kp.params);
            let acc = self.accesses(k, largs, grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2]);
            let strided = self.limits.strided;
            let ids: Vec<usize> = args
                .iter()
                .filter_map(|v| if let HV::Mem(id) = *v { Some(id) } else { None })
                .collect();
            for (p, v) in args.iter().enumerate() {
                if let HV::Mem(id) = *v {
                    if self.mems[id].shadow.is_none() {
                        continue;
                    }
                    let Some(need) = acc.touched(p) else { continue };
                    // Only some elements, with constant strides: move those (an array
                    // passed twice moves its boxes).
                    match acc
                        .touched_lattice(p)
                        .filter(|_| strided && ids.iter().filter(|i| **i == id).count() == 1)
                    {
                        Some((bx, lat)) => {
                            let w = acc.writes.get(&p).map(|w| (w, acc.write_lattice.get(&p)));
                            self.make_valid_strided(id, &bx, &lat, w)?;
                        }
                        None => self.make_valid(id, &need, acc.writes.get(&p))?,
                    }
                }
            }
        } else {
            // No IR to analyse: move whole arrays.
            for v in args {
                if let HV::Mem(id) = *v {
                    let whole = IndexBox::whole(&self.mems[id].shape);
                    self.make_valid(id, &whole, Some(&whole))?;
                }
            }
        }
        let mut cells = std::mem::take(&mut self.cells);
        let r = self
            .marshal(k, args, &HashMap::new(), None, &mut cells)
            .and_then(|()| self.raw_launch(k, &mut cells, grid, block));
        self.cells = cells;
        r
    }

    /// Kernel parameters, one 8-byte cell each (memrefs expand to descriptors).
    /// `ptrs` replaces the (allocated, aligned) pointers of some parameters (tiles);
    /// `offset` replaces the last parameter (the block offset).
    pub(super) fn marshal(
        &self,
        k: usize,
        args: &[HV],
        ptrs: &HashMap<usize, (u64, u64)>,
        offset: Option<i64>,
        cells: &mut Vec<u64>,
    ) -> RunResult<()> {
        let params = &self.p.kernels[k].params;
        cells.clear();
        for (p, (v, param)) in args.iter().zip(params).enumerate() {
            if let Param::Memref(rank) = *param {
                let HV::Mem(id) = *v else {
                    return Err(RunError::Bundle("expected a memref".into()));
                };
                let m = &self.mems[id];
                if m.host.is_some() {
                    return Err(RunError::Bundle("a host scalar slot cannot be passed to a kernel".into()));
                }
                let (alloc, aligned) = ptrs.get(&p).copied().unwrap_or((m.ptr, m.ptr));
                cells.push(alloc);
                cells.push(aligned);
                cells.push(0);
                for d in 0..rank {
                    cells.push(*m.shape.get(d).unwrap_or(&1) as u64);
                }
                let first = cells.len();
                cells.resize(first + rank, 0);
                let mut stride = 1u64;
                for d in (0..rank).rev() {
                    cells[first + d] = stride;
                    stride *= *m.shape.get(d).unwrap_or(&1) as u64;
                }
            } else if p + 1 == args.len() && offset.is_some() {
                cells.push(offset.unwrap_or(0) as u64);
            } else {
                let raw = match (param, *v) {
                    (Param::F32, HV::F(f)) => (f as f32).to_bits() as u64,
                    (Param::F64, HV::F(f)) => f.to_bits(),
                    (Param::I32, HV::I(i)) => i as i32 as u32 as u64,
                    (Param::F16, HV::F(f)) => appy_ir::half::Half::F16.from_f64(f) as u64,
                    (Param::BF16, HV::F(f)) => appy_ir::half::Half::BF16.from_f64(f) as u64,
                    (_, HV::I(i)) => i as u64,
                    (t, _) => {
                        return Err(RunError::Bundle(format!("cannot pass a value as kernel parameter of type {t:?}")));
                    }
                };
                cells.push(raw);
            }
        }
        Ok(())
    }

    fn raw_launch(&mut self, k: usize, cells: &mut [u64], grid: [i64; 3], block: [i64; 3]) -> RunResult<()> {
        let (dev, kernels) = (self.dev, self.kernels);
        self.raw_launch_on(dev, &kernels[k], k, cells, grid, block)
    }

    /// Launches kernel `k` (loaded on `dev` as `kernel`) with parameter cells `cells`.
    pub(super) fn raw_launch_on(
        &mut self,
        dev: &D,
        kernel: &D::Kernel,
        k: usize,
        cells: &mut [u64],
        grid: [i64; 3],
        block: [i64; 3],
    ) -> RunResult<()> {
        let t0 = Instant::now();
        let name = &self.p.kernels[k].name;
        dev.launch(kernel, name, grid.map(|g| g as u32), block.map(|b| b as u32), cells)?;
        if self.limits.sync_launches {
            dev.synchronize().map_err(|e| RunError::Kernel {
                kernel: name.clone(),
                detail: format!("failed: {e}"),
            })?;
            self.timing.kernel_s += t0.elapsed().as_secs_f64();
        }
        self.timing.launches += 1;
        Ok(())
    }

    /// A launch in tiles of blocks: for each tile, the flat range of every argument
    /// array it accesses goes to a temporary device buffer (the descriptor's aligned
    /// pointer is shifted so that global indices land in it), the tile runs, and what it
    /// wrote comes back to the host copy. Tiles shrink until their data fits the budget.
    fn launch_tiled(&mut self, k: usize, args: &[HV], total: i64, block: [i64; 3]) -> RunResult<()> {
        let kp = &self.p.kernels[k];
        let kname = kp.name.clone();
        if kp.body.is_none() {
            return Err(RunError::Bundle(format!("kernel {kname}: no IR to tile")));
        }
        let nthreads = block[0] * block[1] * block[2];
        let largs = self.launch_args(args, &kp.params);
        // The flat element range [f0, f1) of each tiled array parameter for blocks
        // [off, off + n), and whether the tile writes it.
        let ranges = |this: &Self, off: i64, n: i64| -> Vec<TileRange> {
            let mut la = largs.clone();
            if let Some(last) = la.last_mut() {
                *last = LaunchArg::Int(off);
            }
            let acc = crate::regions::analyse(&this.p.kernels[k], &la, n, nthreads);
            let mut out = vec![];
            for (p, v) in args.iter().enumerate() {
                let HV::Mem(id) = *v else { continue };
                let m = &this.mems[id];
                if m.ptr != 0 || m.shadow.is_none() {
                    continue;
                }
                let Some(need) = acc.touched(p) else { continue };
                if need.is_empty() {
                    continue;
                }
                let runs = need.runs(&m.shape);
                let f0 = runs.first().map(|r| r.0).unwrap_or(0);
                let f1 = runs.last().map(|r| r.0 + r.1).unwrap_or(0);
                out.push((p, f0, f1, acc.writes.contains_key(&p)));
            }
            out
        };
        let mem_of = |p: usize| match args[p] {
            HV::Mem(id) => id,
            _ => 0,
        };
        let bytes =
            |this: &Self, r: &[TileRange]| -> usize { r.iter().map(|(p, f0, f1, _)| (f1 - f0) * this.mems[mem_of(*p)].dtype.size()).sum() };
        let mut tile = total.max(1);
        while tile > 1 && bytes(self, &ranges(self, 0, tile)) > self.budget {
            tile = (tile + 1) / 2;
        }
        if tile == 1 && total > 1 && bytes(self, &ranges(self, 0, 1)) > self.budget {
            // Even one block needs more than the budget (its accesses could not be
            // bounded, e.g. indirect ones): smaller tiles would only repeat the same
            // transfers, so run the launch whole.
            tracing::warn!("kernel {kname}: one block's data exceeds the device budget; not tiling");
            tile = total;
        }
        let mut off = 0;
        while off < total {
            let n = tile.min(total - off);
            let rs = ranges(self, off, n);
            let mut ptrs = HashMap::new();
            let mut bufs = vec![];
            for (p, f0, f1, w) in &rs {
                let id = mem_of(*p);
                let es = self.mems[id].dtype.size();
                let nbytes = (f1 - f0) * es;
                let buf = self.dev.malloc(nbytes.max(1))?;
                let src = &self.mems[id].shadow.as_ref().expect("tiled arrays have a host copy")[f0 * es..f1 * es];
                self.dev.htod(buf, src)?;
                self.timing.htod_bytes += nbytes;
                ptrs.insert(*p, (buf, buf.wrapping_sub((f0 * es) as u64)));
                bufs.push((id, buf, *f0, *f1, *w));
            }
            let mut cells = vec![];
            self.marshal(k, args, &ptrs, Some(off), &mut cells)?;
            self.raw_launch(k, &mut cells, [n, 1, 1], block)?;
            self.dev.synchronize().map_err(|e| RunError::Kernel {
                kernel: kname.clone(),
                detail: format!("failed: {e}"),
            })?;
            for (id, buf, f0, f1, w) in bufs {
                let es = self.mems[id].dtype.size();
                if w {
                    let dst = &mut self.mems[id].shadow.as_mut().expect("tiled arrays have a host copy")[f0 * es..f1 * es];
                    self.dev.dtoh(dst, buf)?;
                    self.timing.dtoh_bytes += (f1 - f0) * es;
                }
                self.dev.free(buf)?;
            }
            self.timing.tiles += 1;
            off += n;
        }
        Ok(())
    }
}
