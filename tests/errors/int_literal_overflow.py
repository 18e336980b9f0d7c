import appy


@appy.jit
def brighten(img, out):
    #pragma parallel for
    for i in range(img.shape[0]):
        out[i] = img[i] + 300
# SIGNATURE: u8[:];u8[:]
