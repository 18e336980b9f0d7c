"""The element-wise math library under every spelling (NumPy, math, scipy, `from ...
import`), compared in units in the last place: at most 2 ulp. float64 results are
compared with NumPy's; float32 results with the correctly rounded value (`ref=ld`:
the same function on float64 arguments, rounded), since NumPy's own float32 functions
are up to 3 ulp from it (arcsin, tan). Row k of the output holds function k of the
list above each kernel."""
import math
from math import exp as m_exp, erf as m_erf
import numpy as np
from numpy import exp as n_exp
import scipy.special
from scipy.special import erfc
import appy
from appy import sqrt, tanh


# Rows: exp exp2 expm1 sin cos tan arctan sinh cosh tanh arcsinh (x) (x) floor ceil
# trunc cbrt abs sign round square
# test: x:f64[n]@-3..3 o:f64[21,n] | n=1,999,4097 ulp=2 ref=ld
# test: x:f32[n]@-3..3 o:f32[21,n] | n=1,999,4097 ulp=2 ref=ld
@appy.jit
def unary_wide(x, o):
    o[0] = np.exp(x)
    o[1] = np.exp2(x)
    o[2] = np.expm1(x)
    o[3] = np.sin(x)
    o[4] = np.cos(x)
    o[5] = np.tan(x)
    o[6] = np.arctan(x)
    o[7] = np.sinh(x)
    o[8] = np.cosh(x)
    o[9] = np.tanh(x)
    o[10] = np.arcsinh(x)
    o[11] = x
    o[12] = x
    o[13] = np.floor(x)
    o[14] = np.ceil(x)
    o[15] = np.trunc(x)
    o[16] = np.cbrt(x)
    o[17] = np.abs(x)
    o[18] = np.sign(x)
    o[19] = np.round(x * 4.0)
    o[20] = np.square(x)


# float64 exp, expm1 and tanh (on the CPU: appy-cpu-exp's inline kernel, in vector
# loops) within 1 ulp of the correctly rounded result over their whole range: exp's
# overflow above 709.78, subnormal results below -708.4 and 0 below -745.1, expm1's -1
# below -37, tanh's ±1 beyond 19, near 0, subnormal arguments; the first five elements
# are inf, -inf, nan, 0 and -0. Rows: exp expm1 tanh, and the signs of expm1 and tanh
# (-0 for -0).
# test: x:f64[n]@-760..720 o:f64[5,n] | n=5,999,4097 ulp=1 ref=ld
# test: x:f64[n]@-40..40 o:f64[5,n] | n=4097 ulp=1 ref=ld
# test: x:f64[n]@-1..1 o:f64[5,n] | n=4097 ulp=1 ref=ld
# test: x:f64[n]@-1e-6..1e-6 o:f64[5,n] | n=4097 ulp=1 ref=ld
# test: x:f64[n]@-1e-310..1e-310 o:f64[5,n] | n=999 ulp=1 ref=ld
@appy.jit
def exp_family(x, o):
    #pragma parallel for simd
    for i in range(x.shape[0]):
        v = x[i]
        if i == 0:
            v = math.inf
        elif i == 1:
            v = -math.inf
        elif i == 2:
            v = math.nan
        elif i == 3:
            v = 0.0
        elif i == 4:
            v = -0.0
        o[0, i] = np.exp(v)
        o[1, i] = np.expm1(v)
        o[2, i] = np.tanh(v)
        o[3, i] = np.copysign(1.0, o[1, i])
        o[4, i] = np.copysign(1.0, o[2, i])


# Rows: log log2 log10 log1p sqrt
# test: x:f64[n]@0.001..100 o:f64[5,n] | n=1,999,4097 ulp=2 ref=ld
# test: x:f32[n]@0.001..100 o:f32[5,n] | n=1,999,4097 ulp=2 ref=ld
@appy.jit
def unary_positive(x, o):
    o[0] = np.log(x)
    o[1] = np.log2(x)
    o[2] = np.log10(x)
    o[3] = np.log1p(x)
    o[4] = np.sqrt(x)


# Rows: arcsin arccos arctanh
# test: x:f64[n]@-0.999..0.999 o:f64[3,n] | n=1,999,4097 ulp=2 ref=ld
# test: x:f32[n]@-0.999..0.999 o:f32[3,n] | n=1,999,4097 ulp=2 ref=ld
@appy.jit
def unary_unit(x, o):
    o[0] = np.arcsin(x)
    o[1] = np.arccos(x)
    o[2] = np.arctanh(x)


# test: x:f64[n]@1..50 o:f64[n] | n=1,999 ulp=2 ref=ld
# test: x:f32[n]@1..50 o:f32[n] | n=1,999 ulp=2 ref=ld
@appy.jit
def arccosh(x, o):
    o[:] = np.arccosh(x)


# Rows: arctan2 hypot copysign fmod power(|x|, y) maximum minimum
# test: x:f64[n]@-3..3 y:f64[n]@-3..3 o:f64[7,n] | n=1,999,4097 ulp=2 ref=ld
# test: x:f32[n]@-3..3 y:f32[n]@-3..3 o:f32[7,n] | n=1,999,4097 ulp=2 ref=ld
@appy.jit
def binary(x, y, o):
    o[0] = np.arctan2(y, x)
    o[1] = np.hypot(x, y)
    o[2] = np.copysign(x, y)
    o[3] = np.fmod(x, y)
    o[4] = np.power(np.abs(x), y)
    o[5] = np.maximum(x, y)
    o[6] = np.minimum(x, y)


# test: x:f64[n]@-1e300..1e300 y:f64[n]@-1e-300..1e-300 o:f64[n] | n=999 ulp=1 ref=ld
@appy.jit
def hypot_extremes(x, y, o):
    o[:] = np.hypot(x, y) + np.hypot(y, y * 1e-10)


# isnan, isinf, isfinite on values with NaN and infinities (x / y with zeros).
# test: x:f64[n]@-2..2 y:i64[n]@-1..2 o:bool[3,n] | n=1,50,999
@appy.jit
def predicates(x, y, o):
    #pragma parallel for
    for i in range(x.shape[0]):
        v = x[i] / y[i] if y[i] != 0 else (math.inf if x[i] > 0 else math.nan)
        o[0, i] = np.isnan(v)
        o[1, i] = np.isinf(v)
        o[2, i] = np.isfinite(v)


# The math module and `from ... import` spellings, on scalars in a loop (math.*
# returns Python floats, computed in float64).
# Rows: math.exp, from-math exp, math.cbrt, math.erf, from-math erf, math.erfc,
# math.log1p, math.hypot, math.atan2, math.fmod, math.copysign, math.floor,
# math.trunc, math.sqrt(abs), math.pow(abs, y)
# test: x:f64[n]@-3..3 y:f64[n]@-3..3 o:f64[15,n] | n=1,500 ulp=2
# test: x:f32[n]@-3..3 y:f32[n]@-3..3 o:f64[15,n] | n=1,500 ulp=2
@appy.jit
def math_module(x, y, o):
    #pragma parallel for
    for i in range(x.shape[0]):
        a = x[i]
        b = y[i]
        o[0, i] = math.exp(a)
        o[1, i] = m_exp(a)
        o[2, i] = math.cbrt(a)
        o[3, i] = math.erf(a)
        o[4, i] = m_erf(a)
        o[5, i] = math.erfc(a)
        o[6, i] = math.log1p(abs(a))
        o[7, i] = math.hypot(a, b)
        o[8, i] = math.atan2(a, b)
        o[9, i] = math.fmod(a, b)
        o[10, i] = math.copysign(a, b)
        o[11, i] = math.floor(a)
        o[12, i] = math.trunc(float(a))
        o[13, i] = math.sqrt(abs(a))
        o[14, i] = math.pow(abs(a), b)


# `from appy import exp, sqrt, tanh`, as the APPy paper's listings write them.
# test: x:f32[n]@0..2 o:f32[n] | n=1,999 ulp=2 ref=ld
@appy.jit
def appy_names(x, o):
    #pragma parallel for simd
    for i in range(x.shape[0]):
        o[i] = appy.exp(x[i]) + 0.0 * sqrt(x[i]) + 0.0 * tanh(x[i])


# SciPy's spellings of erf and erfc on arrays (their meaning; accuracy above).
# test: x:f64[n]@-3..3 o:f64[2,n] | n=1,999 rtol=1e-13 atol=1e-15
# test: x:f32[n]@-3..3 o:f32[2,n] | n=1,999 rtol=1e-6 atol=1e-7
@appy.jit
def scipy_spellings(x, o):
    o[0] = scipy.special.erf(x)
    o[1] = erfc(x)


# `from numpy import exp as n_exp`.
# test: x:f64[n]@-3..3 o:f64[n] | n=1,999 ulp=2 ref=ld
# test: x:f32[n]@-3..3 o:f32[n] | n=1,999 ulp=2 ref=ld
@appy.jit
def numpy_import(x, o):
    o[:] = n_exp(x)
