@appy.jit
def kernel_appy(alpha, beta, C, A, B):
    C *= beta
    for i in range(C.shape[0]):
        #pragma parallel for          <- launch one group per i
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]  # collective write
            temp2[j]  = B[:i, j] @ A[i, :i]          # dot product
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2
    return C
