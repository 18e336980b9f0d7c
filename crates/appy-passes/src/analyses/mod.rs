//! Analyses that passes share (they rewrite nothing).

pub mod uniform;
