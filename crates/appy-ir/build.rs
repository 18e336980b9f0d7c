//! Compiles `cxx/register.cpp`: the MLIR dialects, interfaces, passes and translations
//! appy uses, registered one by one instead of MLIR's register-everything C API (which
//! links every dialect and every LLVM target). Only with the `mlir` feature.
fn main() {
    println!("cargo:rerun-if-changed=cxx/register.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    if std::env::var_os("CARGO_FEATURE_MLIR").is_none() {
        return;
    }
    let prefix = std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    cc::Build::new()
        .cpp(true)
        .file("cxx/register.cpp")
        .include(format!("{prefix}/include"))
        .flag("-std=c++17")
        .flag("-fno-rtti")
        .flag("-fno-exceptions")
        .warnings(false)
        .compile("appy_mlir_register");
}
