//! The GPU back end's passes: `loops` → `gpu` (kernels, launches, threads) and the kernels' math.

pub mod libm;
pub mod map_threads;
pub mod outline;
pub mod sink_loads;
pub mod test_barriers;
