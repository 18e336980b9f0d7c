# float64 erfc in a kernel, through to PTX (needs libdevice, for erf): appy's
# expansion (x clamped at 27.5, correctly rounded divisions, the 1.5*2^52 rounding of
# -x^2/ln 2 by an fma, 1 - erf(x) selected below 0.46875), not libdevice's erfc.
# RUN: appy-opt %s --signature 'f64[:],f64[:]' --emit=ptx | filecheck %s
import math

import appy


@appy.jit
def k(x, o):
    #pragma parallel for
    for i in range(x.shape[0]):
        o[i] = math.erfc(x[i])

# CHECK: .visible .entry _appy_k_k0(
# CHECK: setp.gt.f64 {{.*}}, 0d403B800000000000;
# CHECK: {{rcp|div}}.rn.f64
# CHECK: div.rn.f64
# CHECK: fma.rn.f64 {{.*}}, 0d3FF71547652B82FE, 0d4338000000000000;
# CHECK: setp.lt.f64 {{.*}}, 0d3FDE000000000000;
# CHECK: st.global.b64
