//! `appy` → `loops`: strip-mining into MVL-wide lanes.

pub mod strip_mine;
