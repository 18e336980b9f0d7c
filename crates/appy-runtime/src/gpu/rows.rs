//! Strided transfers on the GPU ([`crate::lattice`]): the rows of elements a launch
//! touches cross to the device packed in one copy, and small kernels (PTX written
//! here, loaded on first use) put them in place, or gather them for the copy back.

use super::Gpu;
use crate::device::{Device, DevicePtr};
use crate::error::{RunError, RunResult};
use crate::lattice::Rows;
use cudarc::driver::{CudaFunction, CudaModule, result};
use std::sync::Arc;

/// The packing kernels, per unit of 1, 2, 4 and 8 bytes: `unpack[k]` and `pack[k]`
/// move units of `1 << k` bytes.
pub(super) struct RowKernels {
    _module: Arc<CudaModule>,
    unpack: Vec<CudaFunction>,
    pack: Vec<CudaFunction>,
}

/// Threads per block of the packing kernels.
const THREADS: u64 = 256;

/// The PTX of the packing kernels. `appy_unpack_bN(dst, src, width, pitch, n)` writes
/// unit `t < n` of the packed `src` to `dst[(t / width) * pitch + t % width]`;
/// `appy_pack_bN` reads there and writes `src`'s place (the same parameters).
fn ptx() -> String {
    let mut s = String::from(".version 7.0\n.target sm_52\n.address_size 64\n");
    for bits in [8, 16, 32, 64] {
        let reg = if bits <= 16 { 16 } else { bits };
        let shift = (bits / 8u32).trailing_zeros();
        for (name, unpack) in [("unpack", true), ("pack", false)] {
            let (load_at, store_at) = if unpack { ("%rd11", "%rd13") } else { ("%rd13", "%rd11") };
            s.push_str(&format!(
                ".visible .entry appy_{name}_b{bits}(.param .u64 p_dst, .param .u64 p_src, .param .u64 p_width, .param .u64 p_pitch, .param .u64 p_n)
{{
  .reg .pred %p;
  .reg .b32 %r<4>;
  .reg .b64 %rd<16>;
  .reg .b{reg} %v;
  ld.param.u64 %rd1, [p_dst];
  ld.param.u64 %rd2, [p_src];
  ld.param.u64 %rd3, [p_width];
  ld.param.u64 %rd4, [p_pitch];
  ld.param.u64 %rd5, [p_n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd6, %r1, %r2;
  cvt.u64.u32 %rd7, %r3;
  add.u64 %rd6, %rd6, %rd7;
  setp.ge.u64 %p, %rd6, %rd5;
  @%p bra DONE;
  div.u64 %rd8, %rd6, %rd3;
  mul.lo.u64 %rd9, %rd8, %rd3;
  sub.u64 %rd9, %rd6, %rd9;
  mul.lo.u64 %rd10, %rd8, %rd4;
  add.u64 %rd10, %rd10, %rd9;
  shl.b64 %rd11, %rd6, {shift};
  add.u64 %rd11, %rd2, %rd11;
  shl.b64 %rd13, %rd10, {shift};
  add.u64 %rd13, %rd1, %rd13;
  ld.global.u{bits} %v, [{load_at}];
  st.global.u{bits} [{store_at}], %v;
DONE:
  ret;
}}
"
            ));
        }
    }
    s
}

/// The largest unit (log2 of 1, 2, 4 or 8 bytes) dividing every offset, width and pitch.
fn unit(rows: &[Rows]) -> usize {
    let g = rows.iter().fold(8usize, |g, r| g | r.offset | r.width | r.pitch);
    (g.trailing_zeros() as usize).min(3)
}

impl Gpu {
    fn row_kernels(&self) -> RunResult<&RowKernels> {
        self.rows
            .get_or_init(|| {
                let m = self
                    .ctx
                    .load_module(cudarc::nvrtc::Ptx::from_src(ptx()))
                    .map_err(|e| RunError::driver("loading the packing kernels", e))?;
                let family = |kind: &str| {
                    [8, 16, 32, 64]
                        .map(|b| m.load_function(&format!("appy_{kind}_b{b}")))
                        .into_iter()
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| RunError::driver("loading the packing kernels", e))
                };
                let (unpack, pack) = (family("unpack")?, family("pack")?);
                Ok(RowKernels { _module: m, unpack, pack })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Runs `f` (a packing kernel) over the rows: row `r`'s units between the packed
    /// buffer `packed` (from its running offset) and `array + r.offset`.
    fn run_rows(&self, f: &CudaFunction, u: usize, array: DevicePtr, packed: DevicePtr, rows: &[Rows]) -> RunResult<()> {
        let mut at = 0usize;
        for r in rows {
            let n = (r.bytes() >> u) as u64;
            if n == 0 {
                continue;
            }
            let mut params = [
                array + r.offset as u64,
                packed + at as u64,
                (r.width >> u) as u64,
                (r.pitch >> u) as u64,
                n,
            ];
            let grid = u32::try_from(n.div_ceil(THREADS))
                .map_err(|_| RunError::Arguments(format!("a strided copy of {n} elements is too large for one launch")))?;
            self.launch(f, "a strided copy", [grid, 1, 1], [THREADS as u32, 1, 1], &mut params)?;
            at += r.bytes();
        }
        Ok(())
    }

    /// The pinned staging buffer of strided transfers ([`CHUNK`] bytes, allocated on
    /// first use), or `None` where the driver refuses page-locked memory.
    #[allow(clippy::mut_from_ref)]
    fn staging(&self) -> Option<&mut [u8]> {
        let p = *self
            .staging
            .get_or_init(|| unsafe { result::malloc_host(CHUNK, 0) }.ok().map(|p| p as usize));
        // SAFETY: CHUNK bytes of page-locked host memory this `Gpu` owns; `Gpu` is not
        // `Sync` and the slice does not outlive the call that takes it.
        p.map(|p| unsafe { std::slice::from_raw_parts_mut(p as *mut u8, CHUNK) })
    }

    /// Calls `body(kernel, unit, device buffer, staging chunk, total bytes)` with the
    /// packing kernel (`unpack` or pack) for the rows' unit, a device buffer of their
    /// packed bytes and the staging chunk (page-locked, else ordinary memory).
    fn staged(
        &self,
        rows: &[Rows],
        unpack: bool,
        body: impl FnOnce(&CudaFunction, usize, DevicePtr, &mut [u8], usize) -> RunResult<()>,
    ) -> RunResult<()> {
        let total: usize = rows.iter().map(Rows::bytes).sum();
        if total == 0 {
            return Ok(());
        }
        let u = unit(rows);
        let k = self.row_kernels()?;
        let f = if unpack { &k.unpack[u] } else { &k.pack[u] }.clone();
        let scratch = self.alloc(total)?;
        let mut owned;
        let chunk: &mut [u8] = match self.staging() {
            Some(c) => c,
            None => {
                owned = vec![0u8; CHUNK.min(total)];
                &mut owned
            }
        };
        let done = body(&f, u, scratch, chunk, total);
        if done.is_err() {
            // Kernels of the failed transfer may still use the buffer.
            let _ = self.synchronize();
        }
        self.release(scratch, total);
        done
    }

    /// [`Device::htod_rows`]: the rows gathered on the host into page-locked chunks,
    /// each copied to a device buffer, then unpacked in place on the device.
    pub(super) fn put_rows(&self, dst: DevicePtr, host: &[u8], rows: &[Rows]) -> RunResult<()> {
        self.staged(rows, true, |f, u, scratch, chunk, total| {
            let mut cur = Cursor::new(rows);
            let mut at = 0;
            while at < total {
                let n = cur.copy(chunk.len().min(total - at), |l| {
                    copy_lines(chunk, l.packed, l.width, host, l.host, l.pitch, l.width, l.count)
                });
                self.htod(scratch + at as u64, &chunk[..n])?;
                at += n;
            }
            self.run_rows(f, u, dst, scratch, rows)?;
            self.synchronize()
        })
    }

    /// [`Device::dtoh_rows`]: packed on the device, copied back in page-locked chunks,
    /// each scattered into place on the host.
    pub(super) fn get_rows(&self, host: &mut [u8], src: DevicePtr, rows: &[Rows]) -> RunResult<()> {
        self.staged(rows, false, |f, u, scratch, chunk, total| {
            self.run_rows(f, u, src, scratch, rows)?;
            self.synchronize()?;
            let mut cur = Cursor::new(rows);
            let mut at = 0;
            while at < total {
                let n = chunk.len().min(total - at);
                self.dtoh(&mut chunk[..n], scratch + at as u64)?;
                let c = &chunk[..n];
                cur.copy(n, |l| copy_lines(host, l.host, l.pitch, c, l.packed, l.width, l.width, l.count));
                at += n;
            }
            Ok(())
        })
    }
}

/// Bytes of page-locked memory a strided transfer stages through at a time.
const CHUNK: usize = 16 << 20;

/// A position in the packed stream of rows: row `k`, its `h`-th line, `b` bytes in.
struct Cursor<'a> {
    rows: &'a [Rows],
    k: usize,
    h: usize,
    b: usize,
}

/// `count` lines of `width` bytes, `pitch` bytes apart in the host array from `host`,
/// one after another in the packed stream from `packed` (an offset within one walk).
struct Lines {
    packed: usize,
    host: usize,
    width: usize,
    pitch: usize,
    count: usize,
}

impl<'a> Cursor<'a> {
    fn new(rows: &'a [Rows]) -> Self {
        Cursor { rows, k: 0, h: 0, b: 0 }
    }

    /// Walks up to `max` bytes of the stream from here, calling `f` for each batch of
    /// whole lines (or a piece of a line where a line does not fit); returns the bytes
    /// walked.
    fn copy(&mut self, max: usize, mut f: impl FnMut(Lines)) -> usize {
        let mut done = 0;
        while done < max && self.k < self.rows.len() {
            let r = self.rows[self.k];
            if self.h >= r.height || r.width == 0 {
                self.k += 1;
                self.h = 0;
                self.b = 0;
                continue;
            }
            let host = r.offset + self.h * r.pitch + self.b;
            let whole = (max - done) / r.width;
            if self.b == 0 && whole > 0 {
                let count = whole.min(r.height - self.h);
                f(Lines {
                    packed: done,
                    host,
                    width: r.width,
                    pitch: r.pitch,
                    count,
                });
                done += count * r.width;
                self.h += count;
                continue;
            }
            let len = (r.width - self.b).min(max - done);
            f(Lines {
                packed: done,
                host,
                width: len,
                pitch: r.pitch,
                count: 1,
            });
            done += len;
            self.b += len;
            if self.b == r.width {
                self.b = 0;
                self.h += 1;
            }
        }
        done
    }
}

/// Copies `count` lines of `width` bytes from `src` (from `s`, `s_pitch` apart) to
/// `dst` (from `d`, `d_pitch` apart); lines of 4 and 8 bytes (one element) in a loop
/// the compiler makes a load and a store each.
#[allow(clippy::too_many_arguments)]
fn copy_lines(dst: &mut [u8], d: usize, d_pitch: usize, src: &[u8], s: usize, s_pitch: usize, width: usize, count: usize) {
    fn lines<const W: usize>(dst: &mut [u8], d: usize, d_pitch: usize, src: &[u8], s: usize, s_pitch: usize, count: usize) {
        for c in 0..count {
            let (i, o) = (s + c * s_pitch, d + c * d_pitch);
            let v: [u8; W] = src[i..i + W].try_into().expect("W bytes");
            dst[o..o + W].copy_from_slice(&v);
        }
    }
    match width {
        4 => lines::<4>(dst, d, d_pitch, src, s, s_pitch, count),
        8 => lines::<8>(dst, d, d_pitch, src, s, s_pitch, count),
        16 => lines::<16>(dst, d, d_pitch, src, s, s_pitch, count),
        w => {
            for c in 0..count {
                let (i, o) = (s + c * s_pitch, d + c * d_pitch);
                dst[o..o + w].copy_from_slice(&src[i..i + w]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_walks_rows_in_pieces() {
        let rows = [
            Rows {
                offset: 3,
                width: 5,
                pitch: 9,
                height: 2,
            },
            Rows {
                offset: 40,
                width: 2,
                pitch: 2,
                height: 1,
            },
        ];
        // Through chunks of 4 bytes, then 16, the host array gathered and put back.
        let host: Vec<u8> = (0..64).collect();
        for max in [4, 16] {
            let mut cur = Cursor::new(&rows);
            let mut packed = vec![];
            loop {
                let mut chunk = vec![0u8; max];
                let n = cur.copy(max, |l| {
                    copy_lines(&mut chunk, l.packed, l.width, &host, l.host, l.pitch, l.width, l.count)
                });
                if n == 0 {
                    break;
                }
                packed.extend_from_slice(&chunk[..n]);
            }
            assert_eq!(packed, vec![3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 40, 41], "chunks of {max}");
            let mut back = vec![0u8; 64];
            let mut cur = Cursor::new(&rows);
            let mut at = 0;
            while at < packed.len() {
                let n = max.min(packed.len() - at);
                let chunk = &packed[at..at + n];
                cur.copy(n, |l| {
                    copy_lines(&mut back, l.host, l.pitch, chunk, l.packed, l.width, l.width, l.count)
                });
                at += n;
            }
            for i in [3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 40, 41] {
                assert_eq!(back[i], i as u8);
            }
            assert_eq!(back.iter().filter(|b| **b != 0).count(), 12);
        }
        let _ = Lines {
            packed: 0,
            host: 0,
            width: 0,
            pitch: 0,
            count: 0,
        };
    }

    #[test]
    fn units_and_ptx() {
        let r = |offset, width, pitch| Rows {
            offset,
            width,
            pitch,
            height: 3,
        };
        assert_eq!(unit(&[r(16, 8, 24)]), 3);
        assert_eq!(unit(&[r(4, 8, 24)]), 2);
        assert_eq!(unit(&[r(0, 2, 6), r(8, 8, 8)]), 1);
        assert_eq!(unit(&[r(3, 1, 5)]), 0);
        let p = ptx();
        for b in [8, 16, 32, 64] {
            assert!(p.contains(&format!(".entry appy_unpack_b{b}(")) && p.contains(&format!(".entry appy_pack_b{b}(")));
        }
        assert!(p.contains("ld.global.u64 %v, [%rd11]") && p.contains("st.global.u64 [%rd11], %v"));
    }
}
