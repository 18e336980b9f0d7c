# appy-tensor-temporaries on seed 001 Figure 2: the target A is read with another
# slice, so the value goes to a temporary (allocated once, at the start of the
# function) that is then copied to A; --emit=loops shows the two loops.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-temporaries' | filecheck %s
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-temporaries' | appy-opt - | filecheck %s
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],int,int' --mvl 128 --emit=loops | filecheck %s --check-prefix=LOOPS
# On the CPU (cpu=1), the statement in the worker gets a temporary of its own shape (one
# row), allocated before it and freed after it.
# RUN: appy-opt %s --signature 'f64[:,:],f64[:,:],int,int' --emit=appy | appy-opt - --pass-pipeline='appy-tensor-temporaries{cpu=1}' | filecheck %s --check-prefix=CPU
import appy


@appy.jit
def shift(A, B, M, N):
    #pragma parallel for
    for i in range(M):
        #pragma 1:N=>simd
        A[i, 1:N] = 0.5 * (A[i, :N-1] + B[i, :N-1])

# CHECK-LABEL: func.func @shift
# CHECK: %[[T:[a-z_0-9]+]] = memref.alloc({{.*}}) : memref<?x?xf64>
# CHECK: scf.parallel
# CHECK: "appy.view"(%arg0,
# CHECK: "appy.assign"(%[[T]], {{.*}}appy.temporary
# CHECK: %[[V:[a-z_0-9]+]] = "appy.view"(%[[T]],
# CHECK: "appy.assign"(%arg0, %[[V]],

# LOOPS-LABEL: func.func @shift
# LOOPS: %[[T:[a-z_0-9]+]] = memref.alloc
# LOOPS: scf.parallel
# LOOPS: scf.for
# LOOPS: memref.load %arg0
# LOOPS: memref.store {{.*}}, %[[T]]
# LOOPS: appy.chunks
# LOOPS: scf.for
# LOOPS: memref.load %[[T]]
# LOOPS: memref.store {{.*}}, %arg0
# LOOPS: appy.chunks
# LOOPS: } {appy.inames = ["i"], appy.parallel}

# CPU-LABEL: func.func @shift
# CPU-NOT: memref.alloc
# CPU: scf.parallel
# CPU: %[[T:[a-z_0-9]+]] = memref.alloc({{.*}}) : memref<?xf64>
# CPU: "appy.assign"(%[[T]], {{.*}}appy.temporary
# CPU: %[[V:[a-z_0-9]+]] = "appy.view"(%[[T]],
# CPU: "appy.assign"(%arg0, %[[V]],
# CPU: memref.dealloc %[[T]]
