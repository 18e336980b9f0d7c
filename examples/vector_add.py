import numpy as np
import appy


@appy.jit
def vector_add(A, B, C, N):
    #pragma parallel for simd
    for i in range(N):
        C[i] = A[i] + B[i]


def reference(A, B, C, N):
    C[:N] = A[:N] + B[:N]


if __name__ == "__main__":
    n = 1000
    a, b = np.random.rand(n), np.random.rand(n)
    c = np.empty(n)
    vector_add(a, b, c, n)
    assert np.allclose(c, a + b)
