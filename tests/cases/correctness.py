"""Programs that are correct and that an analysis once refused: each must compile
without an error or a warning and agree with NumPy."""
import numpy as np
import appy


# Red-black Gauss-Seidel: each iteration of the parallel loop writes its row at one
# colour's columns, and reads the rows above and below only at the other colour's
# (`j ≡ 1 + i + color` modulo 2), so the rows are independent.
# test: A:f64[n,n] f:f64[n,n] sweeps:int=3 | n=1,2,7,31,100
@appy.jit
def red_black_sweep(A, f, sweeps):
    N = A.shape[0]
    for t in range(sweeps):
        for color in range(2):
            #pragma parallel for
            for i in range(1, N - 1):
                for j in range(1 + (i + color) % 2, N - 1, 2):
                    A[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1] - f[i, j])
