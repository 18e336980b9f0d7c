import numpy as np
import appy


@appy.jit
def scale(z, c):
    for i in range(z.shape[0]):
        z[i] = z[i] * c
# SIGNATURE: complex128[:]; complex
