# Regression (found by the whole-program fuzzer on the GPU, 402 of 1,000 programs): abs()
# of an integer in a kernel left `math.absi`, which convert-gpu-to-nvvm does not lower,
# and the module could not be translated to LLVM IR ("missing LLVMTranslationDialect-
# Interface registration ... math.absi", an internal compiler error). The kernel
# pipeline now ends with convert-math-to-llvm (llvm.intr.abs: PTX abs.s64).
# RUN: appy-opt %s --signature 'f64[:],i64[:],int' --emit=ptx | filecheck %s
import appy


@appy.jit
def k(a, p, n):
    #pragma parallel for
    for i in range(n):
        a[i] = a[i] / (1.0 + abs(p[i] - 3))

# CHECK: .entry
# CHECK: abs.s64
