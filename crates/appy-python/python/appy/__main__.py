"""``python -m appy --version`` prints the version; ``python -m appy doctor`` prints what
appy finds on this machine: the back ends, the GPU, libdevice (GPU math functions),
BLAS, OpenMP and the compile cache."""
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    import appy
    if argv in (["--version"], ["-V"]):
        print(f"appy {appy.__version__}")
        return 0
    if argv == ["doctor"]:
        if appy._native is None:
            print(f"appy {appy.__version__}: the compiled extension is not loaded (APPY_DISABLE_JIT is set)")
            return 0
        rows = appy._native.doctor()
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            print(f"{k:<{width}}  {v}")
        return 0
    print("usage: python -m appy --version | doctor", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
