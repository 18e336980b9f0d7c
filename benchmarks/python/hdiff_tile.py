#!/usr/bin/env python3
"""NPBench's hdiff (horizontal diffusion) with its Laplacian tiled in shared memory,
against the same kernel without tiling and against torch and torch.compile, on
device-resident torch tensors (float64, in_field (I+4, J+4, K), out_field and coeff
(I, J, K)), in one process:

    python3 benchmarks/python/hdiff_tile.py [--I 256] [--J 256] [--K 160] [--reps 50]

* plain: the form of benchmarks/npbench/kernels.py (the Laplacian stored in a global
  temporary, then one fused flux statement; K in vector lanes);
* loops: the Laplacian stored in `lap` (a parameter: `prefetch` names parameters), the
  flux statement as loops, K in vector lanes. `transform(prefetch(lap))` is refused in
  this form: each of the five Laplacian points a lane reads is read at one offset of
  the lane (`lap[i + a, j + b, k]`), so no tile is shared by several lanes;
* loops, j in lanes: the flux loops with j in the lanes (i and k parallel), where a
  group reads `lap[i + 1, j + c, k]` at c = 0, 1, 2: with `prefetch(lap)` (and
  `prefetch(in_field)`) those reads come from one tile of MVL + 2 per array; the lanes
  are K elements apart in memory;
* flat: the (j, k) plane as one axis `t = j*K + k` of 2-D views, so that the lanes are
  contiguous and `lap[i + 1, j + b, k]` is `lapf[i + 1, t + b*K]`: with K = 160 a
  constant, `prefetch(lapf)` gives one tile of MVL + 2K for the row i + 1 (and
  `prefetch(inf)` one for the row i + 2 of in_field, and in the Laplacian's loop one per
  row). Only for K = KMAX;
* buffer (group mode, one kernel, no global `lap`): a group per point (i, j), or per
  4 points (i, j..j+3), computes the Laplacian values it reads into `appy.buffer`
  scratchpads (shared memory) along K, then the output from them. K <= KMAX.

Each figure is the median over 7 rounds of the mean time of `reps` calls, each call
followed by torch.cuda.synchronize() (appy's calls on device arrays return once their
work is queued, as torch's do); the check is made after two calls (appy's second call
autotunes). GB/s counts in_field, coeff and out_field once. The appy kernels also run
on NumPy arrays on the CPU: benchmarks/python/hdiff_tile_check.py checks them there
against NumPy."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "npbench"))
import kernels as npbench_kernels  # noqa: E402
from _timing import timed  # noqa: E402

import appy  # noqa: E402

# The K extent the scratchpads and the flat variants are compiled for. appy.buffer
# sizes must be compile-time constants, and a jitted function does not see module-level
# names (`appy.buffer(KMAX)` is "error: undefined name `KMAX`"), so the kernels below
# write 160 where they mean KMAX.
KMAX = 160


def reference(xp, in_field, coeff):
    """NPBench's hdiff, for NumPy (xp = np) or torch (xp = torch) arrays."""
    I, J, K = coeff.shape
    lap = 4 * in_field[1:I + 3, 1:J + 3, :] - (in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :] +
                                               in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])
    res1 = lap[1:, 1:J + 1, :] - lap[:-1, 1:J + 1, :]
    flx = xp.where(res1 * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :]) > 0, 0.0, res1)
    res2 = lap[1:I + 1, 1:, :] - lap[1:I + 1, :-1, :]
    fly = xp.where(res2 * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :]) > 0, 0.0, res2)
    return in_field[2:I + 2, 2:J + 2, :] - coeff * (flx[1:, :, :] - flx[:-1, :, :] + fly[:, 1:, :] - fly[:, :-1, :])


# Helpers the kernels call (appy inlines them): the Laplacian at (a, b) of in_field's
# inner grid along K, the flux limiter, and one output point from its neighbours:
# x and xs, xn, xe, xw the input at the point and at i + 1, i - 1, j + 1, j - 1; c and
# ls, ln, le, lw the Laplacian likewise; co the coefficient.
def _lap(f, a, b, K):
    return 4.0 * f[a + 1, b + 1, :K] - (f[a + 2, b + 1, :K] + f[a, b + 1, :K] + f[a + 1, b + 2, :K] + f[a + 1, b, :K])


def _limit(d, g):
    return np.where(d * g > 0, 0.0, d)


def _point(x, xs, xn, xe, xw, c, ls, ln, le, lw, co):
    return x - co * (_limit(ls - c, xs - x) - _limit(c - ln, x - xn) + _limit(le - c, xe - x) - _limit(c - lw, x - xw))


# NPBench's form, as the benchmark runs it.
hdiff_plain = npbench_kernels.hdiff


@appy.jit
def hdiff_loops(in_field, out_field, coeff, lap):
    I, J, K = out_field.shape
    #pragma :I + 2=>parallel :J + 2=>parallel :K=>simd
    lap[:I + 2, :J + 2, :K] = 4.0 * in_field[1:I + 3, 1:J + 3, :K] - (
        in_field[2:I + 4, 1:J + 3, :K] + in_field[0:I + 2, 1:J + 3, :K] + in_field[1:I + 3, 2:J + 4, :K] + in_field[1:I + 3, 0:J + 2, :K])
    #pragma parallel for
    for i in range(I):
        #pragma parallel for
        for j in range(J):
            #pragma simd
            for k in range(K):
                out_field[i, j, k] = _point(
                    in_field[i + 2, j + 2, k], in_field[i + 3, j + 2, k], in_field[i + 1, j + 2, k],
                    in_field[i + 2, j + 3, k], in_field[i + 2, j + 1, k],
                    lap[i + 1, j + 1, k], lap[i + 2, j + 1, k], lap[i, j + 1, k], lap[i + 1, j + 2, k], lap[i + 1, j, k],
                    coeff[i, j, k])


@appy.jit
def hdiff_loops_j(in_field, out_field, coeff, lap):
    I, J, K = out_field.shape
    #pragma :I + 2=>parallel :J + 2=>parallel :K=>simd
    lap[:I + 2, :J + 2, :K] = 4.0 * in_field[1:I + 3, 1:J + 3, :K] - (
        in_field[2:I + 4, 1:J + 3, :K] + in_field[0:I + 2, 1:J + 3, :K] + in_field[1:I + 3, 2:J + 4, :K] + in_field[1:I + 3, 0:J + 2, :K])
    #pragma parallel for
    for i in range(I):
        #pragma parallel for
        for k in range(K):
            #pragma simd
            for j in range(J):
                out_field[i, j, k] = _point(
                    in_field[i + 2, j + 2, k], in_field[i + 3, j + 2, k], in_field[i + 1, j + 2, k],
                    in_field[i + 2, j + 3, k], in_field[i + 2, j + 1, k],
                    lap[i + 1, j + 1, k], lap[i + 2, j + 1, k], lap[i, j + 1, k], lap[i + 1, j + 2, k], lap[i + 1, j, k],
                    coeff[i, j, k])


@appy.jit
def hdiff_prefetch(in_field, out_field, coeff, lap):
    I, J, K = out_field.shape
    #pragma :I + 2=>parallel :J + 2=>parallel :K=>simd
    lap[:I + 2, :J + 2, :K] = 4.0 * in_field[1:I + 3, 1:J + 3, :K] - (
        in_field[2:I + 4, 1:J + 3, :K] + in_field[0:I + 2, 1:J + 3, :K] + in_field[1:I + 3, 2:J + 4, :K] + in_field[1:I + 3, 0:J + 2, :K])
    #pragma parallel for
    for i in range(I):
        #pragma parallel for transform(prefetch(lap))
        for k in range(K):
            #pragma simd
            for j in range(J):
                out_field[i, j, k] = _point(
                    in_field[i + 2, j + 2, k], in_field[i + 3, j + 2, k], in_field[i + 1, j + 2, k],
                    in_field[i + 2, j + 3, k], in_field[i + 2, j + 1, k],
                    lap[i + 1, j + 1, k], lap[i + 2, j + 1, k], lap[i, j + 1, k], lap[i + 1, j + 2, k], lap[i + 1, j, k],
                    coeff[i, j, k])


@appy.jit
def hdiff_prefetch2(in_field, out_field, coeff, lap):
    I, J, K = out_field.shape
    #pragma :I + 2=>parallel :J + 2=>parallel :K=>simd
    lap[:I + 2, :J + 2, :K] = 4.0 * in_field[1:I + 3, 1:J + 3, :K] - (
        in_field[2:I + 4, 1:J + 3, :K] + in_field[0:I + 2, 1:J + 3, :K] + in_field[1:I + 3, 2:J + 4, :K] + in_field[1:I + 3, 0:J + 2, :K])
    #pragma parallel for
    for i in range(I):
        #pragma parallel for transform(prefetch(lap), prefetch(in_field))
        for k in range(K):
            #pragma simd
            for j in range(J):
                out_field[i, j, k] = _point(
                    in_field[i + 2, j + 2, k], in_field[i + 3, j + 2, k], in_field[i + 1, j + 2, k],
                    in_field[i + 2, j + 3, k], in_field[i + 2, j + 1, k],
                    lap[i + 1, j + 1, k], lap[i + 2, j + 1, k], lap[i, j + 1, k], lap[i + 1, j + 2, k], lap[i + 1, j, k],
                    coeff[i, j, k])


# The flat variants take 2-D views: inf (I+4, (J+4)*K), outf and coeff (I, J*K), lapf
# (I+2, (J+2)*K), with K = 160 (KMAX): element (j, k) of a row is t = j*160 + k, so
# column j + b is t + b*160. Each row is cut into tiles of 1024 points, a group each.
@appy.jit
def hdiff_flat(inf, outf, coeff, lapf):
    I = outf.shape[0]
    N = outf.shape[1]
    NL = lapf.shape[1]
    #pragma parallel for
    for a in range(I + 2):
        #pragma parallel for
        for t0 in range(0, NL, 1024):
            #pragma simd
            for t in range(t0, min(t0 + 1024, NL)):
                lapf[a, t] = 4.0 * inf[a + 1, t + 160] - (inf[a + 2, t + 160] + inf[a, t + 160] + inf[a + 1, t + 320] + inf[a + 1, t])
    #pragma parallel for
    for i in range(I):
        #pragma parallel for
        for t0 in range(0, N, 1024):
            #pragma simd
            for t in range(t0, min(t0 + 1024, N)):
                outf[i, t] = _point(
                    inf[i + 2, t + 320], inf[i + 3, t + 320], inf[i + 1, t + 320], inf[i + 2, t + 480], inf[i + 2, t + 160],
                    lapf[i + 1, t + 160], lapf[i + 2, t + 160], lapf[i, t + 160], lapf[i + 1, t + 320], lapf[i + 1, t],
                    coeff[i, t])


@appy.jit
def hdiff_flat_prefetch(inf, outf, coeff, lapf):
    I = outf.shape[0]
    N = outf.shape[1]
    NL = lapf.shape[1]
    #pragma parallel for
    for a in range(I + 2):
        #pragma parallel for
        for t0 in range(0, NL, 1024):
            #pragma simd
            for t in range(t0, min(t0 + 1024, NL)):
                lapf[a, t] = 4.0 * inf[a + 1, t + 160] - (inf[a + 2, t + 160] + inf[a, t + 160] + inf[a + 1, t + 320] + inf[a + 1, t])
    #pragma parallel for
    for i in range(I):
        #pragma parallel for transform(prefetch(lapf))
        for t0 in range(0, N, 1024):
            #pragma simd
            for t in range(t0, min(t0 + 1024, N)):
                outf[i, t] = _point(
                    inf[i + 2, t + 320], inf[i + 3, t + 320], inf[i + 1, t + 320], inf[i + 2, t + 480], inf[i + 2, t + 160],
                    lapf[i + 1, t + 160], lapf[i + 2, t + 160], lapf[i, t + 160], lapf[i + 1, t + 320], lapf[i + 1, t],
                    coeff[i, t])


@appy.jit
def hdiff_flat_prefetch2(inf, outf, coeff, lapf):
    I = outf.shape[0]
    N = outf.shape[1]
    NL = lapf.shape[1]
    #pragma parallel for
    for a in range(I + 2):
        #pragma parallel for transform(prefetch(inf))
        for t0 in range(0, NL, 1024):
            #pragma simd
            for t in range(t0, min(t0 + 1024, NL)):
                lapf[a, t] = 4.0 * inf[a + 1, t + 160] - (inf[a + 2, t + 160] + inf[a, t + 160] + inf[a + 1, t + 320] + inf[a + 1, t])
    #pragma parallel for
    for i in range(I):
        #pragma parallel for transform(prefetch(lapf), prefetch(inf))
        for t0 in range(0, N, 1024):
            #pragma simd
            for t in range(t0, min(t0 + 1024, N)):
                outf[i, t] = _point(
                    inf[i + 2, t + 320], inf[i + 3, t + 320], inf[i + 1, t + 320], inf[i + 2, t + 480], inf[i + 2, t + 160],
                    lapf[i + 1, t + 160], lapf[i + 2, t + 160], lapf[i, t + 160], lapf[i + 1, t + 320], lapf[i + 1, t],
                    coeff[i, t])


# Group mode, one kernel: a group per point (i, j) computes the five Laplacian values
# it reads along K into scratchpads of KMAX = 160 elements (K <= 160).
@appy.jit
def hdiff_buffer(in_field, out_field, coeff):
    I, J, K = out_field.shape
    #pragma parallel for
    for i in range(I):
        #pragma parallel for
        for j in range(J):
            lc = appy.buffer(160)
            ls = appy.buffer(160)
            ln = appy.buffer(160)
            le = appy.buffer(160)
            lw = appy.buffer(160)
            lc[:K] = _lap(in_field, i + 1, j + 1, K)
            ls[:K] = _lap(in_field, i + 2, j + 1, K)
            ln[:K] = _lap(in_field, i, j + 1, K)
            le[:K] = _lap(in_field, i + 1, j + 2, K)
            lw[:K] = _lap(in_field, i + 1, j, K)
            out_field[i, j, :K] = _point(
                in_field[i + 2, j + 2, :K], in_field[i + 3, j + 2, :K], in_field[i + 1, j + 2, :K],
                in_field[i + 2, j + 3, :K], in_field[i + 2, j + 1, :K],
                lc[:K], ls[:K], ln[:K], le[:K], lw[:K], coeff[i, j, :K])


# A group per 4 points (i, j0..j0+3): the Laplacian's row i + 1 at columns j0..j0+5
# (element (b, k) at b*160 + k of `lm`) and its rows i and i + 2 at columns
# j0+1..j0+4 (`ln`, `ls`), 14 columns computed for 4 outputs instead of 20.
@appy.jit
def hdiff_buffer_tile(in_field, out_field, coeff):
    I, J, K = out_field.shape
    #pragma parallel for
    for i in range(I):
        #pragma parallel for
        for j0 in range(0, J, 4):
            lm = appy.buffer(6 * 160)
            ln = appy.buffer(4 * 160)
            ls = appy.buffer(4 * 160)
            for b in range(6):
                if j0 + b < J + 2:
                    lm[b * 160:b * 160 + K] = _lap(in_field, i + 1, j0 + b, K)
            for b in range(4):
                if j0 + b < J:
                    ln[b * 160:b * 160 + K] = _lap(in_field, i, j0 + b + 1, K)
                    ls[b * 160:b * 160 + K] = _lap(in_field, i + 2, j0 + b + 1, K)
            for b in range(4):
                if j0 + b < J:
                    j = j0 + b
                    c = b * 160 + 160
                    out_field[i, j, :K] = _point(
                        in_field[i + 2, j + 2, :K], in_field[i + 3, j + 2, :K], in_field[i + 1, j + 2, :K],
                        in_field[i + 2, j + 3, :K], in_field[i + 2, j + 1, :K],
                        lm[c:c + K], ls[c - 160:c - 160 + K], ln[c - 160:c - 160 + K], lm[c + 160:c + 160 + K],
                        lm[c - 160:c - 160 + K], coeff[i, j, :K])


def variants(in_field, coeff, lap):
    """(name, function, arguments with the output at position 1) of every appy variant
    that applies to these arrays (NumPy or torch: the views are the same)."""
    I, J, K = coeff.shape
    out = []
    for name, fn in (("appy, plain (npbench/kernels.py)", hdiff_plain),):
        out.append((name, fn, lambda o, fn=fn: (in_field, o, coeff)))
    for name, fn in (("appy, loops, K in lanes", hdiff_loops), ("appy, loops, j in lanes", hdiff_loops_j),
                     ("appy, j in lanes, prefetch(lap)", hdiff_prefetch),
                     ("appy, j in lanes, prefetch(lap, in_field)", hdiff_prefetch2)):
        out.append((name, fn, lambda o, fn=fn: (in_field, o, coeff, lap)))
    if K == KMAX:
        for name, fn in (("appy, flat (j, k)", hdiff_flat), ("appy, flat (j, k), prefetch(lapf)", hdiff_flat_prefetch),
                         ("appy, flat (j, k), prefetch(lapf, inf)", hdiff_flat_prefetch2)):
            out.append((name, fn, lambda o, fn=fn: (in_field.reshape(I + 4, (J + 4) * K), o.reshape(I, J * K),
                                                    coeff.reshape(I, J * K), lap.reshape(I + 2, (J + 2) * K))))
    if K <= KMAX:
        for name, fn in (("appy, appy.buffer, group per (i, j)", hdiff_buffer),
                         ("appy, appy.buffer, group per (i, 4 j)", hdiff_buffer_tile)):
            out.append((name, fn, lambda o, fn=fn: (in_field, o, coeff)))
    return out


def table(title, rows, nbytes):
    print(f"# {title}")
    base = rows[0][1]
    print("| variant | µs | GB/s | plain/this | check |")
    print("|---|---:|---:|---:|---|")
    for name, us, ok in rows:
        print(f"| {name} | {us:.1f} | {nbytes / us / 1e3:.0f} | {base / us:.2f} | {ok} |")


def run(variants, want, reps, rtol, atol):
    import torch
    rows = []
    sync = torch.cuda.synchronize
    for name, fn, args in variants:
        out = torch.zeros_like(want)
        a = args(out)
        for _ in range(2):  # appy: the first call runs the default vector length, the second tunes
            fn(*a)
        sync()
        err = (out - want).abs().max().item()
        ok = f"ok ({err:.1e})" if torch.allclose(out, want, rtol=rtol, atol=atol) else f"WRONG ({err:.1e})"
        us = timed(lambda: fn(*a), reps, sync)
        rows.append((name, us, ok))
    return rows


def main():
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--I", type=int, default=256)
    ap.add_argument("--J", type=int, default=256)
    ap.add_argument("--K", type=int, default=160)
    ap.add_argument("--reps", type=int, default=50)
    o = ap.parse_args()
    I, J, K = o.I, o.J, o.K
    assert K <= KMAX, f"K = {K} > KMAX = {KMAX}: the appy.buffer variants hold K elements"
    torch.manual_seed(0)
    print(f"# {torch.cuda.get_device_name()}, {o.reps} calls per round")

    in_field = torch.rand(I + 4, J + 4, K, device="cuda", dtype=torch.float64) + 0.5
    coeff = torch.rand(I, J, K, device="cuda", dtype=torch.float64) + 0.5
    lap = torch.empty(I + 2, J + 2, K, device="cuda", dtype=torch.float64)
    want = reference(torch, in_field, coeff)

    def t_hdiff(in_field, out_field, coeff):
        out_field[:] = reference(torch, in_field, coeff)

    vs = variants(in_field, coeff, lap)
    vs += [("torch", t_hdiff, lambda o: (in_field, o, coeff)),
           ("torch.compile", torch.compile(t_hdiff), lambda o: (in_field, o, coeff))]
    rows = run(vs, want, o.reps, 1e-12, 1e-13)
    table(f"hdiff, I={I} J={J} K={K} float64", rows, 8 * ((I + 4) * (J + 4) * K + 2 * I * J * K))


if __name__ == "__main__":
    main()
