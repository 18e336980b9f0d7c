# PTX for sm_90, in-process.
# RUN: appy-opt %s --signature 'f32[:],f32[:],f32[:],int' --emit=ptx | filecheck %s
import appy


@appy.jit
def vector_add(A, B, C, N):
    #pragma parallel for simd
    for i in range(N):
        C[i] = A[i] + B[i]

# CHECK: .target sm_90
# CHECK: .visible .entry _appy_vector_add_k0(
# CHECK: .maxntid 256, 1, 1
# CHECK: ld.global
# CHECK: add.rn.f32
# CHECK: st.global
