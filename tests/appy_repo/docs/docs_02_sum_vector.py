@jit
def sum_vector(a, N):
    sum = 0
    for i in prange(N):
        sum += a[i]
    return sum

a = np.ones(10)
sum_vector(a, 10)

# sum is now 10
