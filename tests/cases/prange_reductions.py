"""`prange` loops that update array elements several iterations share (seed 000's
reductions into one element): `prange` makes `+=`, `-=`, `t = t + v`, `t = t - v` and
`t = max(t, v)` / `min` of such elements atomic (`crates/appy-frontend/src/sema/prange.rs`).
Large sizes make lost updates show on the CPU's threads."""
import numpy as np
import appy


# test: a:f64[n] s:f64[1] | n=1,1000,100003
@appy.jit
def prange_sum_into_one_element(a, s):
    for i in appy.prange(a.shape[0]):
        s[0] += a[i]


# test: a:f64[n] s:f64[1] | n=1,1000,100003
@appy.jit
def prange_sum_written_out(a, s):
    for i in appy.prange(a.shape[0]):
        s[0] = s[0] + a[i]


# test: a:f64[n] s:f64[1] | n=1,1000,100003
@appy.jit
def prange_sum_written_out_reversed(a, s):
    for i in appy.prange(a.shape[0]):
        s[0] = a[i] + s[0]


# test: a:f64[n] s:f64[2] | n=1,1000,100003
@appy.jit
def prange_difference_into_one_element(a, s):
    for i in appy.prange(a.shape[0]):
        s[0] -= a[i]
        s[1] = s[1] - 2.0 * a[i]


# test: a:f64[n] s:f64[4] | n=1,1000,100003
@appy.jit
def prange_max_min_into_elements(a, s):
    for i in appy.prange(a.shape[0]):
        s[0] = max(s[0], a[i])
        s[1] = min(a[i], s[1])
        s[2] = np.maximum(s[2], a[i])
        s[3] = np.minimum(a[i], s[3])


# test: a:f32[n]@0..1 s:f32[2] | n=1,1000,100003
@appy.jit
def prange_float32_sum_and_max(a, s):
    for i in appy.prange(a.shape[0]):
        s[0] += a[i]
        s[1] = max(s[1], a[i])


# test: a:f64[n] s:f64[m] | n=1,1000,100003 m=3
@appy.jit
def prange_element_chosen_outside(a, s):
    j = s.shape[0] - 1
    for i in appy.prange(a.shape[0]):
        s[j] += a[i]


# test: a:f64[n] s:f64[2,3] | n=1,1000,100003
@appy.jit
def prange_element_of_a_matrix(a, s):
    for i in appy.prange(a.shape[0]):
        s[1, 2] += a[i]
        s[0, 0] = s[0, 0] + 1.0


# test: idx:i64[n] h:i64[m] c:i64[1] | n=1,1000,100003 m=11
@appy.jit
def prange_int64_histogram(idx, h, c):
    for i in appy.prange(idx.shape[0]):
        h[idx[i]] += 1
        c[0] = c[0] + idx[i]


# test: a:f64[n] s:f64[3] | n=1,1000,100003
@appy.jit
def prange_under_an_inner_loop(a, s):
    for i in appy.prange(a.shape[0]):
        for k in range(3):
            s[k] += a[i] * k


# test: a:f64[n] s:f64[m] | n=2,1000,100003 m=1,500,50002
@appy.jit
def prange_pairs_share_an_element(a, s):
    for i in appy.prange(a.shape[0]):
        s[i // 2] += a[i]


# test: a:f64[n] s:f64[n] | n=1,1000,100003
@appy.jit
def prange_distinct_elements_stay_plain(a, s):
    for i in appy.prange(a.shape[0]):
        s[i] = s[i] + a[i]
        s[i] = max(s[i], 0.25)
