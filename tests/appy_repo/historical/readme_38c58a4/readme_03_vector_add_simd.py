@appy.jit
def vector_add(A, B, C):
    #pragma parallel for simd
    for i in range(A.shape[0]):
        C[i] = A[i] + B[i]
