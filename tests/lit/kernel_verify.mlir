// A hand-edited kernel-level module is checked before it is lowered: statement s1
// depends on `s7`, which is not an earlier statement of the kernel.
// RUN: not appy-opt %s --emit=gpu | filecheck %s
// CHECK: kernel_verify.mlir:{{[0-9]+}}:{{[0-9]+}}: error: appy-gpu-outline: kernel level: statement `s1` depends on `s7`, which is not an earlier statement of `_appy_twice_k0` (earlier: s0)
module {
  func.func @twice(%arg0: memref<?xf64>, %arg1: memref<?xf64>, %arg2: memref<?xf64>) attributes {appy.arg_names = ["a", "b", "c"], llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf64>
    %0 = arith.index_cast %dim : index to i64
    %c0_i64 = arith.constant 0 : i64
    %1 = arith.index_cast %c0_i64 : i64 to index
    %2 = arith.index_cast %0 : i64 to index
    %c1 = arith.constant 1 : index
    %cst = arith.constant 2.000000e+00 : f64
    %c64 = arith.constant 64 : index
    %3 = arith.muli %c1, %c64 : index
    %4 = arith.subi %2, %1 : index
    %5 = arith.ceildivsi %4, %3 : index
    %c0_0 = arith.constant 0 : index
    %c1_1 = arith.constant 1 : index
    scf.parallel (%arg3) = (%c0_0) to (%5) step (%c1_1) {
      %6 = arith.muli %arg3, %3 : index
      %c0_2 = arith.constant 0 : index
      %c1_3 = arith.constant 1 : index
      %c64_4 = arith.constant 64 : index
      scf.parallel (%arg4) = (%c0_2) to (%c64_4) step (%c1_3) {
        %7 = arith.muli %arg4, %c1 : index
        %8 = arith.addi %6, %7 : index
        %9 = arith.addi %1, %8 : index
        %10 = arith.cmpi slt, %9, %2 : index
        scf.if %10 {
          %11 = arith.index_cast %9 : index to i64
          %12 = arith.index_cast %11 : i64 to index
          %13 = memref.load %arg0[%12] : memref<?xf64>
          %14 = arith.mulf %cst, %13 : f64
          memref.store %14, %arg1[%12] {appy.id = "s0", appy.within = ["i_outer", "i_inner"]} : memref<?xf64>
          %15 = memref.load %arg1[%12] : memref<?xf64>
          %16 = memref.load %arg0[%12] : memref<?xf64>
          %17 = arith.addf %15, %16 : f64
          memref.store %17, %arg2[%12] {appy.dep = ["s7"], appy.id = "s1", appy.nosync_with = ["s0@any"], appy.within = ["i_outer", "i_inner"]} : memref<?xf64>
        }
        scf.reduce 
      } {appy.domain = "{ [i_inner] : 0 <= i_inner < 64 }", appy.inames = ["i_inner"], appy.lanes, appy.tags = ["l.0"]}
      scf.reduce 
    } {appy.domain = "[a_dim0] -> { [i_outer] : 0 <= i_outer < floor((a_dim0 + 63)/64) }", appy.inames = ["i_outer"], appy.kernel = "_appy_twice_k0", appy.parallel, appy.params = ["a_dim0"], appy.tags = ["g.0"]}
    return
  }
}

