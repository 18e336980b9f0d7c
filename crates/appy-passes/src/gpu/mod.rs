//! The GPU back end's passes: `loops` → `gpu` (kernels, launches, threads), seed 002's
//! code generation on the kernels (unroll-and-jam, vector loads) and the kernels' math.

pub mod keep_reductions;
pub mod libm;
pub mod map_threads;
pub mod one_strip;
pub mod outline;
pub mod redundant_loads;
pub mod sink_loads;
pub mod test_barriers;
pub mod unroll_and_jam;
pub mod vector_loads;
