import numpy as np
import appy


@appy.jit
def floor_at(img, out):
    #pragma parallel for
    for i in range(img.shape[0]):
        out[i] = np.maximum(img[i], 300)
# SIGNATURE: uint8[:]; uint8[:]
