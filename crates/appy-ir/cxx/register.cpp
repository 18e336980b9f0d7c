//===- register.cpp - the MLIR dialects, extensions, passes and translations appy uses -===//
//
// MLIR's C API registers everything at once (`mlirRegisterAllDialects`,
// `mlirRegisterAllPasses`, `mlirRegisterAllLLVMTranslations`). Whatever a registration
// function names is linked in, so registering everything links every dialect and, through
// the `llvm-target-to-*` passes, every LLVM target (AMDGPU, RISC-V, Hexagon, ...): about
// half of the extension's size and of a context's start-up. appy registers what its
// pipelines run instead (MLIR's own advice in InitAllExtensions.h): the dialects its
// levels print, the interfaces the conversions to LLVM and NVVM look up, the upstream
// passes its pipelines name plus MLIR's generic transforms, and the translations to LLVM
// IR of the dialects that reach it.
//
// `tests/bundles/golden.txt` (every example's and NPBench kernel's PTX and CPU code,
// byte for byte) and the lit tests check that nothing that matters is missing.
//
//===----------------------------------------------------------------------------------===//

#include "mlir-c/IR.h"
#include "mlir/CAPI/IR.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/Extensions/AllExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/IRDL/IR/IRDL.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/InlinerInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// The dialects appy's levels print and parse, and the interfaces its pipelines use.
extern "C" void appyRegisterDialects(MlirDialectRegistry wrapped) {
  DialectRegistry &registry = *unwrap(wrapped);
  registry.insert<affine::AffineDialect, arith::ArithDialect, cf::ControlFlowDialect,
                  DLTIDialect, func::FuncDialect, gpu::GPUDialect, index::IndexDialect,
                  irdl::IRDLDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, NVVM::NVVMDialect, omp::OpenMPDialect,
                  scf::SCFDialect, ub::UBDialect, vector::VectorDialect>();
  // Interfaces that canonicalisation and the conversions look up.
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  builtin::registerCastOpInterfaceExternalModels(registry);
  gpu::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  vector::registerValueBoundsOpInterfaceExternalModels(registry);
  LLVM::registerInlinerInterface(registry);
  NVVM::registerInlinerInterface(registry);
  func::registerAllExtensions(registry);
  // `#nvvm.target`: gpu-module-to-binary serialises through it.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  // Conversions to LLVM and NVVM through dialect interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  registerConvertOpenMPToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
}

/// The upstream passes appy's pipelines name, and MLIR's generic transforms
/// (canonicalize, cse, loop-invariant-code-motion, ...) for `appy-opt --pass-pipeline`.
extern "C" void appyRegisterPasses() {
  registerTransformsPasses();
  arith::registerArithExpandOpsPass();
  memref::registerExpandStridedMetadataPass();
  registerGpuNVVMAttachTarget();
  registerGpuModuleToBinaryPass();
  registerSCFToControlFlowPass();
  registerArithToLLVMConversionPass();
  registerConvertControlFlowToLLVMPass();
  registerConvertFuncToLLVMPass();
  registerConvertIndexToLLVMPass();
  registerConvertMathToLLVMPass();
  registerConvertMathToLibmPass();
  registerFinalizeMemRefToLLVMConversionPass();
  registerConvertGpuOpsToNVVMOps();
  registerConvertNVVMToLLVMPass();
  registerConvertOpenMPToLLVMPass();
  registerConvertVectorToLLVMPass();
  registerReconcileUnrealizedCastsPass();
}

/// The translations to LLVM IR of the dialects that reach it (the CPU's execution
/// engine, the GPU's NVVM serialisation).
extern "C" void appyRegisterTranslations(MlirContext wrapped) {
  MLIRContext &context = *unwrap(wrapped);
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  context.appendDialectRegistry(registry);
}
