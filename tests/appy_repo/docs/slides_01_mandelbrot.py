@appy.jit
def mandelbrot(out, width, height, max_iter):
    #pragma parallel for
    for idx in range(width * height):
        x = idx % width
        y = idx // width
        c = complex(x / width * 3.5 - 2.5,
                    y / height * 2.0 - 1.0)
        z, i = 0+0j, 0
        while abs(z) <= 2.0 and i < max_iter:
            z = z * z + c
            i += 1
        out[y, x] = i
