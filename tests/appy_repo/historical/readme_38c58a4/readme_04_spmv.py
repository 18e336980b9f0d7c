@appy.jit
def spmv(A_row, A_col, A_val, x, y, N):
    #pragma parallel for
    for i in range(N - 1):
        yi = 0.0
        #pragma simd
        for j in range(A_row[i], A_row[1+i]):
            yi += A_val[j] * x[A_col[j]]
        y[i] = yi
